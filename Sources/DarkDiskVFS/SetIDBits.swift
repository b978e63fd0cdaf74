#if canImport(Glibc)
import Glibc
#endif

/// The set-user-ID and set-group-ID bits that a change to a file takes away, as Linux's own file systems
/// do: a change of owner takes them from anyone's file, a write or a truncation by anyone but root. The
/// daemon clears them itself (the mount asks the kernel for `FUSE_HANDLE_KILLPRIV`, saving the `GETATTR`
/// the kernel would send before each `chown`). Pure, for tests.
enum SetIDBits {
    /// `mode` without set-user-ID, and without set-group-ID when the group may execute (without that bit
    /// set-group-ID means mandatory locking, and stays); nil when nothing changes.
    static func cleared(_ mode: UInt32) -> UInt32? {
        var result = mode & ~UInt32(S_ISUID)
        if mode & UInt32(S_ISGID | S_IXGRP) == UInt32(S_ISGID | S_IXGRP) { result &= ~UInt32(S_ISGID) }
        return result == mode ? nil : result
    }
}
