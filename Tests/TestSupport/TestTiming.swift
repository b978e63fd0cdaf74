import Foundation

/// Whether this run measures time honestly. Under a sanitizer (`Scripts/test --long` sets
/// `DARKDISK_TEST_SANITIZER`) the test process runs several times slower, so bounds on how long something
/// takes are not checked there; what happens still is.
public enum TestTiming {
    public static var isSanitized: Bool {
        ProcessInfo.processInfo.environment["DARKDISK_TEST_SANITIZER"] != nil
    }

    /// How long to wait for something that happens on its own (an eviction after a release, another
    /// process's change): `seconds`, or ten times that under a sanitizer, where the whole suite shares the
    /// machine with the sanitizer's own work.
    public static func patience(_ seconds: Double) -> Double {
        isSanitized ? seconds * 10 : seconds
    }
}
