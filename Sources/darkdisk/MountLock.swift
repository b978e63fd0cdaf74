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

    private var fd: Int32

    /// Takes the store's lock for a daemon serving `mountpoint`; throws, naming the daemon that holds it,
    /// when another does.
    init(_ location: StoreLocation, mountpoint: String) throws {
        let path = Self.path(location)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw CLIError("cannot open \(path): \(String(cString: strerror(errno)))") }
        let locked: Bool
        do { locked = try SystemCall.tryLock(fd, .exclusive) } catch {
            close(fd)
            throw CLIError("cannot lock \(path): \(error)")
        }
        var held = !locked
        // A daemon whose mount is gone is stopping (it writes what waits into the index, then lets go): its
        // lock is waited for, up to a minute, so an unmount and a mount at once just work.
        let deadline = Date(timeIntervalSinceNow: 60)
        while held, Self.holder(atPath: path).map(Self.isServing) != true, Date() < deadline {
            usleep(100_000)
            held = (try? SystemCall.tryLock(fd, .exclusive)) != true
        }
        guard !held else {
            close(fd)
            throw Self.alreadyMounted(Self.holder(atPath: path))
        }
        let text = "\(getpid()) \(mountpoint)\n"
        guard ftruncate(fd, 0) == 0, (try? text.utf8CString.dropLast().withUnsafeBytes { try SystemCall.pwrite(fd, from: $0.baseAddress!, count: $0.count, at: 0) }) != nil else {
            close(fd)
            throw CLIError("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        self.fd = fd
    }

    /// Lets go of the lock, emptying the file (a clean stop leaves nothing to report); once.
    func release() {
        guard fd >= 0 else { return }
        _ = ftruncate(fd, 0)
        close(fd)
        fd = -1
    }

    /// Whether a daemon mounts the store at `location`, as its lock file says.
    static func state(_ location: StoreLocation) -> State {
        let path = Self.path(location)
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return .free }
        defer { close(fd) }
        guard let holder = holder(atPath: path) else { return .free }
        // (Taking a shared lock for a moment only tells whether a daemon holds the exclusive one.)
        if (try? SystemCall.tryLock(fd, .shared)) == true {
            _ = flock(fd, LOCK_UN)
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
