import DarkDiskSystem
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
        do {
            fd = try SystemCall.open(path, O_RDONLY | O_NOFOLLOW)
        } catch {
            throw RemoteError(.io, "cannot open \(path): \(error)")
        }
        do { try SystemCall.lock(fd, .shared) } catch {
            close(fd)
            throw RemoteError(.io, "cannot lock \(path): \(error)")
        }
        self.path = path
    }

    deinit {
        unlink(path)
        close(fd)
    }

    /// Removes the downloads in `folder` that no process holds. Only a real folder is swept (a symbolic
    /// link planted in its place is never followed), and only files named as this type names them.
    static func sweep(_ folder: String) {
        var st = stat()
        guard lstat(folder, &st) == 0, st.st_mode & S_IFMT == S_IFDIR,
              let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        for name in names where name.hasSuffix(".ddc") && UUID(uuidString: String(name.dropLast(4))) != nil {
            let path = folder + "/" + name
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { continue }
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { unlink(path) }
            close(fd)
        }
    }
}
