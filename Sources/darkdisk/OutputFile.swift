import DarkDiskSystem
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
            let file: OwnedDescriptor
            do { file = try OwnedDescriptor.open(path, O_WRONLY | O_TRUNC) } catch { throw CLIError("cannot write \(path): \(error)") }
            try withExtendedLifetime(file) { try body(file.rawValue) }
            return
        }
        let temporary = path + ".darkdisk-partial"
        let file: OwnedDescriptor
        do { file = try OwnedDescriptor.open(temporary, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o666) } catch {
            throw CLIError("cannot create \(path): \(error)")
        }
        do {
            if exists { fchmod(file.rawValue, existing.st_mode & 0o7777) }
            try body(file.rawValue)
            do {
                try file.fsync()
                try file.close()
            } catch {
                throw CLIError("cannot write \(path): \(error)")
            }
            guard rename(temporary, path) == 0 else { throw CLIError("cannot create \(path): \(String(cString: strerror(errno)))") }
        } catch {
            try? file.close()  // (nothing if it closed already)
            unlink(temporary)
            throw error
        }
    }
}
