import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A file the user named with `-o`. A regular file (or a new one) appears only complete: written next to
/// it, flushed, then renamed into place, with an existing file's permissions kept (a private file stays
/// private). Anything else (a device such as /dev/null, a FIFO, a symbolic link) is written into, as `cp`
/// would, never replaced.
enum OutputFile {
    static func write(to path: String, _ body: (Int32) throws -> Void) throws {
        var existing = stat()
        let exists = lstat(path, &existing) == 0
        if exists && existing.st_mode & S_IFMT != S_IFREG {
            let fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)
            guard fd >= 0 else { throw CLIError("cannot write \(path): \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            try body(fd)
            return
        }
        let temporary = path + ".darkdisk-partial"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        guard fd >= 0 else { throw CLIError("cannot create \(path): \(String(cString: strerror(errno)))") }
        do {
            if exists { fchmod(fd, existing.st_mode & 0o7777) }
            try body(fd)
            guard fsync(fd) == 0 else { throw CLIError("cannot write \(path): \(String(cString: strerror(errno)))") }
            close(fd)
            guard rename(temporary, path) == 0 else { throw CLIError("cannot create \(path): \(String(cString: strerror(errno)))") }
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
    }
}
