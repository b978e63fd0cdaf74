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

    /// Moves the file at `source` to `path` and takes ownership of it. The file is locked before it gets its
    /// name in the sweep's folder, so a sweep by another process never takes it for debris.
    init(moving source: String, to path: String) throws(RemoteError) {
        do {
            fd = try SystemCall.open(source, O_RDONLY | O_NOFOLLOW)
        } catch {
            throw RemoteError(.io, "cannot open \(source): \(error)")
        }
        do { try SystemCall.lock(fd, .shared) } catch {
            close(fd)
            throw RemoteError(.io, "cannot lock \(source): \(error)")
        }
        guard rename(source, path) == 0 else {
            let error = RemoteError(.io, "cannot move \(source) to \(path): \(String(cString: strerror(errno)))")
            close(fd)
            throw error
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
