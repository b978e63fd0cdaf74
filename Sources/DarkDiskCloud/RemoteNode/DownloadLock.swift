import DarkDiskSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An exclusive lock on one node's download, across processes and instances (a `flock` on a lock file
/// next to the partial files), so two downloaders never write one partial file. Released by deinit, which
/// removes the lock file while still holding it; an acquirer checks it locked the file still at `path`.
final class DownloadLock: Sendable {
    private let fd: Int32
    private let path: String

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit {
        unlink(path)
        close(fd)
    }

    /// The lock, or nil if another downloader holds it.
    static func tryAcquire(_ path: String) throws(RemoteError) -> DownloadLock? {
        while true {
            let fd: Int32
            do { fd = try SystemCall.open(path, O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o600) } catch {
                throw RemoteError(.io, "cannot create \(path): \(error)")
            }
            let locked: Bool
            do { locked = try SystemCall.tryLock(fd, .exclusive) } catch {
                close(fd)
                throw RemoteError(.io, "cannot lock \(path): \(error)")
            }
            guard locked else {
                close(fd)
                return nil
            }
            var held = stat()
            var current = stat()
            if fstat(fd, &held) == 0, stat(path, &current) == 0, held.st_ino == current.st_ino, held.st_dev == current.st_dev {
                return DownloadLock(fd: fd, path: path)
            }
            close(fd)  // The holder removed it between our open and our lock: try the new file.
        }
    }
}
