import DarkDiskSync
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A copy of a read-only store's index and WAL in a private temporary folder, removed when the process
/// exits: SQLite reads a WAL database only where it can make the shared-memory file beside it.
enum ReadOnlyIndexCopy {
    private static let folders = Locked<[String]>([])

    /// Copies `path` (and `path-wal`) and returns the copy's path.
    static func make(of path: String) throws -> String {
        var template = Array((NSTemporaryDirectory() + "darkdisk-index-XXXXXX").utf8CString)
        guard let folder = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }).map({ String(cString: $0) }) else {
            throw DarkDiskError(.io, "cannot make a temporary folder: \(String(cString: strerror(errno)))")
        }
        let first = folders.withLock { folders in
            folders.append(folder)
            return folders.count == 1
        }
        if first { atexit { ReadOnlyIndexCopy.removeAll() } }
        let copy = folder + "/index.sqlite"
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        if FileManager.default.fileExists(atPath: path + "-wal") {
            try FileManager.default.copyItem(atPath: path + "-wal", toPath: copy + "-wal")
        }
        return copy
    }

    static func removeAll() {
        for folder in folders.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: folder) }
    }
}
