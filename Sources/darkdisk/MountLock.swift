import DarkDiskStore
import DarkDiskFS
import DarkDiskSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One mount per store: the mount daemon holds an exclusive `flock` on `mount.lock` in the store's data
/// folder for as long as it serves, with its process ID and mount point written in it. A second `mount` of
/// the store is refused in one line naming the first (one whose daemon is stopping, its mount gone, waits
/// for it) (two daemons would each keep their own view of what is
/// being written, and appends through both would make two files); `status` reads who mounts the store, and
/// says so when a daemon died without unmounting (the file names it, nobody holds the lock).
final class MountLock {
    /// The daemon that holds (or held) a store's lock.
    struct Holder: Equatable {
        let pid: pid_t
        let mountpoint: String
    }

    /// What the lock file says of a store.
    enum State: Equatable {
        /// No daemon mounts the store (and none died mounting it).
        case free
        /// A running daemon serves the store at a mount point.
        case held(Holder)
        /// A daemon mounted the store and died without unmounting (`kill -9`, a crash).
        case abandoned(Holder)
    }

    static func path(_ location: StoreLocation) -> String { location.dataDirectory + "/mount.lock" }

    /// The lock file, holding the exclusive lock until `release`.
    private let file: OwnedDescriptor

    /// Takes the store's lock for a daemon serving `mountpoint`; throws, naming the daemon that holds it,
    /// when another does.
    init(_ location: StoreLocation, mountpoint: String) throws {
        let path = Self.path(location)
        // (A failure below closes the file, and lets go of a lock taken, as the owner goes.)
        let file: OwnedDescriptor
        do { file = try OwnedDescriptor.open(path, O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o600) } catch {
            throw CLIError("cannot open \(path): \(error)")
        }
        let locked: Bool
        do { locked = try file.tryLock(.exclusive) } catch {
            throw CLIError("cannot lock \(path): \(error)")
        }
        var held = !locked
        // A daemon whose mount is gone is stopping (it writes what waits into the index, then lets go): its
        // lock is waited for, up to a minute, so an unmount and a mount at once just work.
        let deadline = Date(timeIntervalSinceNow: 60)
        while held, Self.holder(atPath: path).map(Self.isServing) != true, Date() < deadline {
            usleep(100_000)
            held = (try? file.tryLock(.exclusive)) != true
        }
        guard !held else {
            throw Self.alreadyMounted(Self.holder(atPath: path))
        }
        do {
            try file.truncate(to: 0)
            try file.pwrite(Array("\(getpid()) \(mountpoint)\n".utf8), at: 0)
        } catch {
            throw CLIError("cannot write \(path): \(error)")
        }
        self.file = file
    }

    /// Lets go of the lock, emptying the file (a clean stop leaves nothing to report); once.
    func release() {
        guard file.rawValue >= 0 else { return }
        try? file.truncate(to: 0)  // (best effort: `status` then reports a stopped daemon as one that died)
        try? file.close()
    }

    /// Whether a daemon mounts the store at `location`, as its lock file says.
    static func state(_ location: StoreLocation) -> State {
        let path = Self.path(location)
        guard let file = try? OwnedDescriptor.open(path, O_RDONLY | O_NOFOLLOW) else { return .free }
        guard let holder = holder(atPath: path) else { return .free }
        // (Taking a shared lock for a moment only tells whether a daemon holds the exclusive one; it goes
        // with the descriptor, whatever the unlock says.)
        if (try? file.tryLock(.shared)) == true {
            try? file.unlock()
            return .abandoned(holder)
        }
        return .held(holder)
    }

    /// Whether `holder`'s mount point is still mounted by a darkdisk daemon (else it is stopping).
    static func isServing(_ holder: Holder) -> Bool {
        MountTable.top(at: holder.mountpoint)?.isDarkdisk == true
    }

    /// The refusal of a second mount.
    static func alreadyMounted(_ holder: Holder?) -> CLIError {
        guard let holder else { return CLIError("the store is already mounted (its mount daemon is starting or stopping); unmount it first") }
        return CLIError("the store is already mounted at \(holder.mountpoint) (daemon PID \(holder.pid)); unmount it first: darkdisk unmount \(holder.mountpoint)")
    }

    private static func holder(atPath path: String) -> Holder? {
        guard let data = FileManager.default.contents(atPath: path),
              let line = String(data: data, encoding: .utf8)?.split(separator: "\n").first,
              let space = line.firstIndex(of: " "), let pid = pid_t(line[..<space]) else { return nil }
        return Holder(pid: pid, mountpoint: String(line[line.index(after: space)...]))
    }
}
