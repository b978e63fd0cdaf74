#if canImport(Glibc)
import Glibc
#endif
import DarkDiskSystem

/// Permission checks on a single-user mount, where the daemon checks the owner's mode bits itself
/// (`AccessCheck`): each operation asks `check` before it acts, as the kernel would under
/// `default_permissions`, and `access(2)` and `chdir` ask `access`.
extension VFS {
    /// Throws `EACCES` unless the owner may do `wanted` to `ino`. Passes always when the kernel checks or
    /// the owner is root (who may read and write anything; the kernel itself refuses to execute a file
    /// without an execute bit). An entry that is gone passes: the operation answers `ENOENT` itself.
    func check(_ ino: Inode, _ wanted: AccessMode) throws(Errno) {
        guard checksOwnerBits.load(ordering: .relaxed), let entry = inodes.withLock({ $0.entry(for: ino) }) else { return }
        try check(entry, wanted)
    }

    /// `check` for an entry already looked up.
    func check(_ entry: FSEntry, _ wanted: AccessMode) throws(Errno) {
        guard checksOwnerBits.load(ordering: .relaxed), let mode = try? current(entry)?.stat.st_mode, !AccessCheck.allows(wanted, mode: mode, isRoot: false) else { return }
        throw Errno(rawValue: EACCES)
    }

    /// `access(2)`, `faccessat` and `chdir` (the kernel asks only when the daemon checks permissions):
    /// throws `EACCES` when `mask` is not allowed.
    package func access(_ ino: Inode, mask: Int32) throws {
        guard let entry = inodes.withLock({ $0.entry(for: ino) }) else { throw Errno(rawValue: ENOENT) }
        guard let mode = try current(entry)?.stat.st_mode else { throw Errno(rawValue: ENOENT) }
        let wanted = AccessMode(rawValue: UInt32(mask) & 0o7)
        guard AccessCheck.allows(wanted, mode: mode, isRoot: uid == 0) else { throw Errno(rawValue: EACCES) }
    }
}
