import DarkDiskSystem
#if canImport(Glibc)
import Glibc
#endif

/// What libfuse and `fusermount3` print on standard error while a call runs. They say why a mount failed
/// only there ("fuse: failed to open /dev/fuse: Permission denied"), and a backgrounded daemon's standard
/// error is its log file, so the one line the user sees would otherwise have to point elsewhere. The text
/// goes to a temporary file (not a pipe: `fusermount3` may stay alive with it, for `auto_unmount`), and is
/// also written to the real standard error afterwards.
enum StandardErrorCapture {
    static func capturing<T>(_ body: () throws -> T) rethrows -> (result: T, text: String) {
        // An unlinked file in the temporary folder (tmpfile(3)), its descriptor owned here.
        let stream = tmpfile()
        let file = stream.map { dup(fileno($0)) } ?? -1
        if let stream { fclose(stream) }
        if file >= 0 { _ = fcntl(file, F_SETFD, FD_CLOEXEC) }
        let saved = file >= 0 ? fcntl(2, F_DUPFD_CLOEXEC, 3) : -1
        guard file >= 0, saved >= 0, dup2(file, 2) >= 0 else {
            if file >= 0 { close(file) }
            if saved >= 0 { close(saved) }
            return (try body(), "")
        }
        let result: T
        do {
            result = try body()
        } catch {
            restore(saved, file)
            throw error
        }
        let text = restore(saved, file)
        return (result, text)
    }

    /// Puts standard error back, copies what was captured onto it, and returns that text.
    @discardableResult
    private static func restore(_ saved: Int32, _ file: Int32) -> String {
        dup2(saved, 2)
        close(saved)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 16 {
            guard let n = try? SystemCall.pread(file, into: &buffer, count: buffer.count, at: UInt64(bytes.count)), n > 0 else { break }
            bytes += buffer[0..<n]
        }
        close(file)
        _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
