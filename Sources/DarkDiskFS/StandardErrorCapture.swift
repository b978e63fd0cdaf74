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
        let copy = stream.map { dup(fileno($0)) } ?? -1
        if let stream { fclose(stream) }
        let capture = copy >= 0 ? OwnedDescriptor(owning: copy) : nil
        if let capture { _ = fcntl(capture.rawValue, F_SETFD, FD_CLOEXEC) }
        let original = capture.map { _ in fcntl(2, F_DUPFD_CLOEXEC, 3) }.flatMap { $0 >= 0 ? OwnedDescriptor(owning: $0) : nil }
        guard let file = capture, let saved = original, dup2(file.rawValue, 2) >= 0 else {
            try? capture?.close()
            try? original?.close()
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
    private static func restore(_ saved: OwnedDescriptor, _ file: OwnedDescriptor) -> String {
        dup2(saved.rawValue, 2)
        try? saved.close()
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 16 {
            guard let n = try? file.pread(into: &buffer, count: buffer.count, at: UInt64(bytes.count)), n > 0 else { break }
            bytes += buffer[0..<n]
        }
        try? file.close()
        _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
