import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `/dev/fuse`'s mode belongs to the machine: Debian 12 makes it 0666 once the fuse3 udev rule ran, 0600
/// before. Tests that need other users kept out of it, or let in, set it for their run and put it back,
/// one test at a time (a lock file, so that no other test changes it meanwhile).
enum DevFuse {
    /// Runs `body` with others' read and write bits of /dev/fuse set (`open`) or cleared, then restores them.
    static func withOthers<T>(open: Bool, _ body: () async throws -> T) async throws -> T {
        let lock = Glibc.open(NSTemporaryDirectory() + "darkdisk-tests-dev-fuse.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard lock >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        defer { Glibc.close(lock) }
        // (Blocks its thread: the tests that take it run on threads of their own, `.processSlots`.)
        guard flock(lock, LOCK_EX) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var st = stat()
        guard stat("/dev/fuse", &st) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        let mode = st.st_mode & 0o7777
        let wanted = open ? mode | 0o006 : mode & ~0o006
        if wanted != mode { guard chmod("/dev/fuse", wanted) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) } }
        defer { if wanted != mode { _ = chmod("/dev/fuse", mode) } }
        return try await body()
    }
}
