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
    /// The file, holding the shared lock until it is removed (this object's end).
    private let file: OwnedDescriptor

    /// Moves the file at `source` to `path` and takes ownership of it. The file is locked before it gets its
    /// name in the sweep's folder, so a sweep by another process never takes it for debris.
    init(moving source: String, to path: String) throws(RemoteError) {
        do {
            file = try OwnedDescriptor.open(source, O_RDONLY | O_NOFOLLOW)
        } catch {
            throw RemoteError(.io, "cannot open \(source): \(error)")
        }
        do { try file.lock(.shared) } catch {
            throw RemoteError(.io, "cannot lock \(source): \(error)")
        }
        guard rename(source, path) == 0 else {
            throw RemoteError(.io, "cannot move \(source) to \(path): \(String(cString: strerror(errno)))")
        }
        self.path = path
    }

    deinit {
        unlink(path)
        try? file.close()
    }

    /// Removes the downloads in `folder` that no process holds. Only a real folder is swept (a symbolic
    /// link planted in its place is never followed), and only files named as this type names them.
    static func sweep(_ folder: String) {
        var st = stat()
        guard lstat(folder, &st) == 0, st.st_mode & S_IFMT == S_IFDIR,
              let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        for name in names where name.hasSuffix(".ddc") && UUID(uuidString: String(name.dropLast(4))) != nil {
            let path = folder + "/" + name
            guard let file = try? OwnedDescriptor.open(path, O_RDONLY | O_NOFOLLOW) else { continue }
            if (try? file.tryLock(.exclusive)) == true { unlink(path) }
            try? file.close()
        }
    }
}
