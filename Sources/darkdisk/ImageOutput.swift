import DarkDiskSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where `thumbnail` and `avatar` write the image: standard output, or a file that appears only complete.
enum ImageOutput {
    /// `path` nil or "-": standard output.
    static func write(_ data: Data, to path: String?) throws {
        guard let path, path != "-" else {
            try StandardStreams.requireOutput()
            try write(data, fd: STDOUT_FILENO, name: "standard output")
            return
        }
        try OutputFile.write(to: path) { fd in try write(data, fd: fd, name: path) }
    }

    private static func write(_ data: Data, fd: Int32, name: String) throws {
        try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            guard !bytes.isEmpty else { return }
            do { try SystemCall.write(fd, from: bytes.baseAddress!, count: bytes.count) } catch {
                throw CLIError("cannot write \(name): \(error)")
            }
        }
    }
}
