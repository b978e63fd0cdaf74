import DarkDiskSync
#if canImport(Glibc)
import Glibc
#endif

/// The staging files imports are writing in this process. An interrupted command (SIGINT, SIGTERM) removes
/// them before it exits: a `timeout 10 darkdisk import /dev/zero` left gigabytes of staging behind.
package enum StagingFiles {
    private static let paths = Locked<Set<String>>([])

    static func register(_ path: String) { paths.withLock { _ = $0.insert(path) } }
    static func unregister(_ path: String) { paths.withLock { _ = $0.remove(path) } }

    /// Unlinks every staging file being written now (the import that writes one then fails, or the process
    /// exits). Safe from a signal handler's queue: one lock and `unlink` calls.
    package static func removeAll() {
        for path in paths.withLock({ $0 }) { unlink(path) }
    }
}
