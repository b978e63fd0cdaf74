import CFuse3
#if canImport(Glibc)
import Glibc
#endif

/// Permission checks on a single-user mount, where the daemon checks the owner's mode bits itself
/// (`AccessCheck`, `MountOptions.admitsOthers`): each operation asks `permits` before it acts, as the kernel
/// would under `default_permissions`, and `access(2)` and `chdir` ask `access`.
extension FuseFileSystem {
    /// Whether the owner may do `wanted` to `ino`; answers `EACCES` when not. Always, when the kernel checks
    /// or the owner is root (who may read and write anything; the kernel itself refuses to execute a file
    /// without an execute bit). An entry that is gone passes: the operation answers `ENOENT` itself.
    func permits(_ reply: FuseReply, _ ino: fuse_ino_t, _ wanted: AccessMode) -> Bool {
        guard checksOwnerBits.load(ordering: .relaxed) else { return true }
        guard let entry = inodes.withLock({ $0.entry(for: ino) }) else { return true }
        return permits(reply, entry, wanted)
    }

    /// `permits` for an entry already looked up.
    func permits(_ reply: FuseReply, _ entry: FSEntry, _ wanted: AccessMode) -> Bool {
        guard checksOwnerBits.load(ordering: .relaxed), let mode = try? current(entry)?.stat.st_mode, !AccessCheck.allows(wanted, mode: mode, isRoot: false) else { return true }
        reply.error(EACCES)
        return false
    }

    /// `access(2)`, `faccessat` and `chdir` (the kernel asks only when the daemon checks permissions).
    func access(_ reply: FuseReply, ino: fuse_ino_t, mask: Int32) {
        guard let entry = inodes.withLock({ $0.entry(for: ino) }) else { reply.error(ENOENT); return }
        do {
            guard let mode = try current(entry)?.stat.st_mode else { reply.error(ENOENT); return }
            let wanted = AccessMode(rawValue: UInt32(mask) & 0o7)
            reply.error(AccessCheck.allows(wanted, mode: mode, isRoot: uid == 0) ? 0 : EACCES)
        } catch {
            reply.error(FuseErrno.from(error))
        }
    }
}
