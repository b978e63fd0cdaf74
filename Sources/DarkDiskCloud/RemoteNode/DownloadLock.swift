import DarkDiskSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An exclusive lock on one node's download, across processes and instances (a `flock` on a lock file
/// next to the partial files), so two downloaders never write one partial file. Released by deinit, which
/// removes the lock file while still holding it; an acquirer checks it locked the file still at `path`.
final class DownloadLock: Sendable {
    private let file: OwnedDescriptor
    private let path: String

    private init(file: OwnedDescriptor, path: String) {
        self.file = file
        self.path = path
    }

    deinit {
        unlink(path)  // while still holding it; the owner closes the descriptor after
    }

    /// The lock, or nil if another downloader holds it.
    static func tryAcquire(_ path: String) throws(RemoteError) -> DownloadLock? {
        while true {
            let file: OwnedDescriptor
            do { file = try OwnedDescriptor.open(path, O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o600) } catch {
                throw RemoteError(.io, "cannot create \(path): \(error)")
            }
            let locked: Bool
            do { locked = try file.tryLock(.exclusive) } catch {
                throw RemoteError(.io, "cannot lock \(path): \(error)")
            }
            guard locked else { return nil }
            var current = stat()
            if let held = try? file.stat(), stat(path, &current) == 0, held.st_ino == current.st_ino, held.st_dev == current.st_dev {
                return DownloadLock(file: file, path: path)
            }
            // The holder removed it between our open and our lock: try the new file (this one closes as it goes).
        }
    }
}
