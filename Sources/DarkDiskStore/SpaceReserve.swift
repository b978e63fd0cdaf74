import DarkDiskSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One MiB of real blocks kept beside the index (`data/reserve`), given up when the disk is full so that
/// the index can still commit the write that frees space (a `delete`); made again once there is room. On
/// a full disk every command used to fail on its first index write, `delete` (the way out) included.
enum SpaceReserve {
    static let size = 1 << 20

    static func path(in dataDirectory: String) -> String { dataDirectory + "/reserve" }

    /// Makes the reserve if it is missing and the disk has room (best effort: a full or read-only disk
    /// keeps none, and nothing fails for it).
    static func ensure(in dataDirectory: String) {
        let target = path(in: dataDirectory)
        var st = stat()
        if stat(target, &st) == 0, st.st_size == off_t(size) { return }
        let temporary = target + ".new"
        guard let file = try? OwnedDescriptor.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600) else { return }
        let zeros = [UInt8](repeating: 0, count: 65536)
        var written = 0
        while written < size {
            let count = min(zeros.count, size - written)
            guard (try? file.write(from: zeros, count: count)) != nil else { break }
            written += count
        }
        let complete = written == size && (try? file.fsync()) != nil
        try? file.close()
        if complete { rename(temporary, target) } else { unlink(temporary) }
    }

    /// Gives the reserve up; returns whether there was one to give.
    static func release(in dataDirectory: String) -> Bool {
        unlink(path(in: dataDirectory)) == 0
    }

    /// Whether the file system holding `path` is mounted read-only.
    static func isReadOnly(_ path: String) -> Bool {
        guard let folder = try? OwnedDescriptor.open(path, O_RDONLY | O_DIRECTORY) else { return false }
        var st = statvfs()
        return fstatvfs(folder.rawValue, &st) == 0 && st.f_flag & UInt(ST_RDONLY) != 0
    }
}
