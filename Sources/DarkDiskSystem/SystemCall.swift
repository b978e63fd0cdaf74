#if canImport(Glibc)
import Glibc
#endif

/// The system calls darkdisk makes, each retried on `EINTR`, run to its full length where a short transfer
/// is not an answer, and throwing the `Errno` captured at once. Every module calls these instead of writing
/// its own loops; each module turns an `Errno` into its own error type with the path or name involved.
package enum SystemCall {
    /// Runs `call` again while it fails with `EINTR`; a failure's errno is captured before anything else runs.
    @inlinable
    package static func retrying<Result: BinaryInteger>(_ call: () -> Result) throws(Errno) -> Result {
        while true {
            let result = call()
            if result >= 0 { return result }
            let error = Errno.current
            if error != .interrupted { throw error }
        }
    }

    /// `open(2)`, with `O_CLOEXEC` always added.
    package static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(Errno) -> Int32 {
        try retrying { Glibc.open(path, flags | O_CLOEXEC, mode) }
    }

    /// Reads up to `count` bytes at `offset`, stopping early only at the end of the file; returns the bytes read.
    package static func pread(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, at offset: UInt64) throws(Errno) -> Int {
        var done = 0
        while done < count {
            let n = try retrying { Glibc.pread(fd, buffer + done, count - done, off_t(offset) + off_t(done)) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Writes all `count` bytes at `offset`.
    package static func pwrite(_ fd: Int32, from buffer: UnsafeRawPointer, count: Int, at offset: UInt64) throws(Errno) {
        var done = 0
        while done < count {
            done += try retrying { Glibc.pwrite(fd, buffer + done, count - done, off_t(offset) + off_t(done)) }
        }
    }

    /// Reads from a stream until `count` bytes arrived or it ended; returns the bytes read (0 only at the end).
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int) throws(Errno) -> Int {
        var done = 0
        while done < count {
            let n = try retrying { Glibc.read(fd, buffer + done, count - done) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// The whole file at `path`, read until `read(2)` says it ended: a `/proc` file has no size to go by,
    /// and Foundation's `String(contentsOfFile:)` stops after its first page (64 of 103 lines of a
    /// `mountinfo`, so a mount on a later line was not seen).
    package static func readWhole(_ path: String) throws(Errno) -> [UInt8] {
        let fd = try open(path, O_RDONLY | O_CLOEXEC)
        defer { try? close(fd) }
        var bytes: [UInt8] = []
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 65_536, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = try readSome(fd, into: buffer, count: 65_536)
            if count == 0 { return bytes }
            bytes += UnsafeRawBufferPointer(start: buffer, count: count)
        }
    }

    /// Reads whatever one `read(2)` gives (at most `count`; 0 at the end): for pipes read as they fill.
    package static func readSome(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int) throws(Errno) -> Int {
        try retrying { Glibc.read(fd, buffer, count) }
    }

    /// Writes all `count` bytes to a stream.
    package static func write(_ fd: Int32, from buffer: UnsafeRawPointer, count: Int) throws(Errno) {
        var done = 0
        while done < count {
            done += try retrying { Glibc.write(fd, buffer + done, count - done) }
        }
    }

    /// `close(2)`, never retried: Linux frees the descriptor even when `close` fails with `EINTR`, so a retry
    /// could close a number another thread has just been given. A failure can carry a deferred write error.
    package static func close(_ fd: Int32) throws(Errno) {
        if Glibc.close(fd) != 0 { throw Errno.current }
    }

    /// `fsync(2)`: the file's data and metadata reach the disk (a folder's: its entries).
    package static func fsync(_ fd: Int32) throws(Errno) {
        _ = try retrying { Glibc.fsync(fd) }
    }

    /// `fdatasync(2)`: the file's data reaches the disk, and only the metadata needed to read it back.
    package static func fdatasync(_ fd: Int32) throws(Errno) {
        _ = try retrying { Glibc.fdatasync(fd) }
    }

    /// `ftruncate(2)`: the file cut to `size` bytes, or extended to it with a hole.
    package static func ftruncate(_ fd: Int32, to size: UInt64) throws(Errno) {
        _ = try retrying { Glibc.ftruncate(fd, off_t(size)) }
    }

    /// `fstat(2)`: the open file's status (size, inode, links, blocks).
    package static func fstat(_ fd: Int32) throws(Errno) -> stat {
        var status = stat()
        _ = try retrying { Glibc.fstat(fd, &status) }
        return status
    }

    /// The kinds of `flock(2)` lock.
    package enum LockKind: Sendable {
        case shared, exclusive

        var operation: Int32 { self == .shared ? LOCK_SH : LOCK_EX }
    }

    /// Takes a `flock(2)` lock, waiting for it (retrying `EINTR`).
    package static func lock(_ fd: Int32, _ kind: LockKind) throws(Errno) {
        _ = try retrying { callFlock(fd, kind.operation) }
    }

    /// Takes a `flock(2)` lock if nobody holds a conflicting one: false if someone does.
    package static func tryLock(_ fd: Int32, _ kind: LockKind) throws(Errno) -> Bool {
        do throws(Errno) {
            _ = try retrying { callFlock(fd, kind.operation | LOCK_NB) }
            return true
        } catch {
            guard error == .wouldBlock else { throw error }
            return false
        }
    }

    /// Releases a `flock(2)` lock.
    package static func unlock(_ fd: Int32) throws(Errno) {
        _ = try retrying { callFlock(fd, LOCK_UN) }
    }
}

/// `flock(2)`: Glibc's `flock` also names a struct, which a closure cannot tell apart from the call.
private func callFlock(_ fd: Int32, _ operation: Int32) -> Int32 {
    flock(fd, operation)
}
