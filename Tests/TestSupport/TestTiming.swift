import Foundation

/// Whether this run measures time honestly. Under a sanitizer (`Scripts/test --long` sets
/// `DARKDISK_TEST_SANITIZER`) the test process runs several times slower, so bounds on how long something
/// takes are not checked there; what happens still is.
public enum TestTiming {
    public static var isSanitized: Bool {
        ProcessInfo.processInfo.environment["DARKDISK_TEST_SANITIZER"] != nil
    }
}
