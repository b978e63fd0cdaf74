import DarkDiskSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Standard input, output and error as the command found them. A process started with one of them closed
/// would otherwise reuse its number for the first file it opens (the index, say), and plaintext meant for
/// standard output could land there; a closed one is replaced by /dev/null and remembered.
enum StandardStreams {
    private nonisolated(unsafe) static var closed: Set<Int32> = []
    /// The C stream `print` writes to, found by its symbol (Swift 6 refuses a reference to the global
    /// `stdout` as shared mutable state).
    private nonisolated(unsafe) static let output: UnsafeMutablePointer<FILE>? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "stdout") else { return nil }
        return symbol.assumingMemoryBound(to: UnsafeMutablePointer<FILE>?.self).pointee
    }()

    /// Called once, first thing, before anything opens a file.
    static func prepare() {
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
            closed.insert(fd)
            guard let null = try? SystemCall.open("/dev/null", O_RDWR) else { continue }
            if null == fd {
                _ = fcntl(fd, F_SETFD, 0)  // (a standard stream is inherited: not close-on-exec, as the open made it)
            } else {
                dup2(null, fd)
                try? SystemCall.close(null)
            }
        }
    }

    /// Fails when standard output was closed: what was meant for it has nowhere to go.
    static func requireOutput() throws {
        if closed.contains(STDOUT_FILENO) { throw CLIError("standard output is closed; write to a file with -o FILE") }
    }

    /// Flushes what `print` buffered; a full disk or a closed pipe becomes the command's one-line failure
    /// instead of an exit 0 with the output lost.
    static func flushOutput() throws {
        guard let output else { return }
        // (Before the flush: what is still buffered counts, and /dev/null keeps no position.)
        if closed.contains(STDOUT_FILENO) && ftell(output) > 0 { throw CLIError("cannot write standard output: it is closed") }
        if fflush(output) != 0 || ferror(output) != 0 {
            let reason = errno == 0 ? "write error" : String(cString: strerror(errno))
            throw CLIError("cannot write standard output: \(reason)")
        }
    }
}
