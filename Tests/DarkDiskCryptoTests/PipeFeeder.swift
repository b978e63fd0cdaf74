import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A pipe whose write end is fed `data` by another thread, so encrypting from its read end exercises a
/// stream of unknown length that arrives in pieces.
enum PipeFeeder {
    /// Calls `body` with the read end of a pipe that delivers `data` and then end of file.
    static func withPipe<T>(feeding data: [UInt8], _ body: (Int32) throws -> T) throws -> T {
        signal(SIGPIPE, SIG_IGN)
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        let readEnd = fds[0]
        let writeEnd = fds[1]
        let finished = DispatchSemaphore(value: 0)
        let thread = Thread {
            data.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let piece = min(buffer.count - offset, 10_000)
                    let written = write(writeEnd, buffer.baseAddress! + offset, piece)
                    if written <= 0 { break }
                    offset += written
                }
            }
            close(writeEnd)
            finished.signal()
        }
        thread.start()
        defer {
            close(readEnd)
            finished.wait()
        }
        return try body(readEnd)
    }
}
