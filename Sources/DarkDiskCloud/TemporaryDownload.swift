import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A downloaded file kept outside the DiskManager (a download without `cacheToDiskManager`): it belongs to
/// its holders and is removed when the last reference goes. It holds a shared `flock`, so a sweep by any
/// process removes only files nobody holds (left behind by a crash).
final class TemporaryDownload: Sendable {
    let path: String
    private let fd: Int32

    /// Takes ownership of the file at `path`.
    init(path: String) throws(RemoteError) {
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw RemoteError(.io, "cannot open \(path): \(String(cString: strerror(errno)))") }
        flock(fd, LOCK_SH)
        self.path = path
    }

    deinit {
        unlink(path)
        close(fd)
    }

    /// Removes the files in `folder` that no process holds.
    static func sweep(_ folder: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        for name in names {
            let path = folder + "/" + name
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { continue }
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { unlink(path) }
            close(fd)
        }
    }
}
