#if canImport(Glibc)
import Glibc
#endif

/// What a request wants of an entry: the `rwx` bits of its mode.
struct AccessMode: OptionSet, Sendable {
    let rawValue: UInt32
    static let read = AccessMode(rawValue: 4)
    static let write = AccessMode(rawValue: 2)
    /// Execute for a file, search (walking through it, a lookup in it) for a folder.
    static let execute = AccessMode(rawValue: 1)

    /// The kernel's `__FMODE_EXEC` in an open's flags: the open of `execve`, which wants execute, not read.
    static let execOpenFlag: Int32 = 0o40

    /// What `open` with `flags` wants: read, write or both by its access mode, write for `O_TRUNC`, and
    /// execute alone for `execve`'s open (a binary the owner may execute but not read still runs).
    init(openFlags flags: Int32) {
        if flags & Self.execOpenFlag != 0, flags & O_ACCMODE == O_RDONLY {
            self = .execute
            return
        }
        switch flags & O_ACCMODE {
        case O_WRONLY: self = .write
        case O_RDWR: self = [.read, .write]
        default: self = .read
        }
        if flags & O_TRUNC != 0 { insert(.write) }
    }

    init(rawValue: UInt32) { self.rawValue = rawValue }
}

/// Permission checks by mode bits for a mount whose every caller is its owner, who owns every entry: the
/// kernel lets only the mounting user in without `allow_other` or `allow_root`, and every entry belongs
/// to that user. The owner's bits then decide, as on a local disk; root may read and write anything, and
/// execute what has an execute bit for anyone (folders always). Pure: no FUSE, no index.
enum AccessCheck {
    /// Whether the owner (root, when `isRoot`) may do `wanted` to an entry of `mode` (with its type bits).
    static func allows(_ wanted: AccessMode, mode: mode_t, isRoot: Bool) -> Bool {
        if isRoot {
            guard wanted.contains(.execute), mode & S_IFMT != S_IFDIR else { return true }
            return mode & 0o111 != 0
        }
        let owner = (UInt32(mode) >> 6) & 0o7
        return wanted.rawValue & ~owner == 0
    }
}
