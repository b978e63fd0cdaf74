import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where `thumbnail` and `avatar` write the image: standard output, or a file that appears only complete.
enum ImageOutput {
    static func write(_ data: Data, to path: String?) throws {
        guard let path else {
            try write(data, fd: STDOUT_FILENO, name: "standard output")
            return
        }
        let temporary = path + ".darkdisk-partial"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CLIError("cannot create \(path): \(String(cString: strerror(errno)))") }
        do {
            try write(data, fd: fd, name: path)
            guard fsync(fd) == 0 else { throw CLIError("cannot write \(path): \(String(cString: strerror(errno)))") }
            close(fd)
            guard rename(temporary, path) == 0 else { throw CLIError("cannot create \(path): \(String(cString: strerror(errno)))") }
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
    }

    private static func write(_ data: Data, fd: Int32, name: String) throws {
        try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            var written = 0
            while written < bytes.count {
                let n = Glibc.write(fd, bytes.baseAddress! + written, bytes.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw CLIError("cannot write \(name): \(String(cString: strerror(errno)))")
                }
                written += n
            }
        }
    }
}
