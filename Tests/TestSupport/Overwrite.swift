import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes `data` over the file at `path` in place (the same inode) and puts its access and modification
/// times back, as a bucket's owner would to keep a `file://` ETag (inode, size, time); returns whether the
/// file is as before but for its bytes (same inode, size and times).
public func overwriteKeepingTimes(_ path: String, with data: Data) throws -> Bool {
    var before = stat()
    guard stat(path, &before) == 0, let handle = FileHandle(forWritingAtPath: path) else { return false }
    try handle.write(contentsOf: data)
    try handle.close()
    var times = [before.st_atim, before.st_mtim]
    guard utimensat(AT_FDCWD, path, &times, 0) == 0 else { return false }
    var after = stat()
    return stat(path, &after) == 0 && after.st_ino == before.st_ino && after.st_size == before.st_size
        && after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec
}
