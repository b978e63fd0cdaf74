import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An open descriptor and its one owner, which closes it exactly once: in `close()`, or when the last
/// reference goes. Whatever keeps a file open holds one of these (a retain token, a scratch file, a lock
/// file), and whatever reads through someone else's descriptor keeps a reference to it, so the descriptor
/// cannot close, and its number go to another file, under a call. Its methods are `SystemCall`'s.
package final class OwnedDescriptor: Sendable {
    /// The descriptor, -1 once closed (a call made after that fails with `EBADF`, never on another file).
    private let descriptor: Atomic<Int32>

    /// Takes ownership of `rawValue`, an open descriptor: it is closed when this object goes.
    package init(owning rawValue: Int32) {
        precondition(rawValue >= 0, "a descriptor owner needs an open descriptor, not \(rawValue)")
        descriptor = Atomic(rawValue)
    }

    /// Opens `path` (`SystemCall.open`: close-on-exec, `EINTR` retried).
    package static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(Errno) -> OwnedDescriptor {
        OwnedDescriptor(owning: try SystemCall.open(path, flags, mode: mode))
    }

    deinit {
        let fd = descriptor.load(ordering: .acquiring)
        if fd >= 0 { try? SystemCall.close(fd) }
    }

    /// The descriptor's number, for calls this type has no method for (-1 once closed). It stays open only
    /// while this object lives: keep a reference (a stored property, `withExtendedLifetime`) across the call.
    package var rawValue: Int32 { descriptor.load(ordering: .acquiring) }

    /// Closes the descriptor now, reporting a failed `close` (which can carry a deferred write error); a
    /// second call does nothing. Only for a sole holder: another holder's calls would fail with `EBADF`.
    package func close() throws(Errno) {
        let fd = descriptor.exchange(-1, ordering: .acquiringAndReleasing)
        if fd >= 0 { try SystemCall.close(fd) }
    }

    /// Reads up to `count` bytes at `offset`, stopping early only at the end of the file (`SystemCall.pread`).
    package func pread(into buffer: UnsafeMutableRawPointer, count: Int, at offset: UInt64) throws(Errno) -> Int {
        try SystemCall.pread(rawValue, into: buffer, count: count, at: offset)
    }

    /// Writes all `count` bytes at `offset` (`SystemCall.pwrite`).
    package func pwrite(from buffer: UnsafeRawPointer, count: Int, at offset: UInt64) throws(Errno) {
        try SystemCall.pwrite(rawValue, from: buffer, count: count, at: offset)
    }

    /// Up to `count` bytes at `offset`, fewer only at the end of the file: for small files read whole.
    package func pread(count: Int, at offset: UInt64) throws(Errno) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let got = try pread(into: &bytes, count: count, at: offset)
        bytes.removeLast(count - got)
        return bytes
    }

    /// Writes all of `bytes` at `offset`.
    package func pwrite(_ bytes: [UInt8], at offset: UInt64) throws(Errno) {
        try pwrite(from: bytes, count: bytes.count, at: offset)
    }

    /// Reads from a stream until `count` bytes arrived or it ended (`SystemCall.read`).
    package func read(into buffer: UnsafeMutableRawPointer, count: Int) throws(Errno) -> Int {
        try SystemCall.read(rawValue, into: buffer, count: count)
    }

    /// Writes all `count` bytes at the file's position (`SystemCall.write`).
    package func write(from buffer: UnsafeRawPointer, count: Int) throws(Errno) {
        try SystemCall.write(rawValue, from: buffer, count: count)
    }

    /// `fsync(2)`: data and metadata reach the disk.
    package func fsync() throws(Errno) {
        try SystemCall.fsync(rawValue)
    }

    /// `fdatasync(2)`: the data reaches the disk.
    package func fdatasync() throws(Errno) {
        try SystemCall.fdatasync(rawValue)
    }

    /// `ftruncate(2)`: the file cut to `size` bytes, or extended to it with a hole.
    package func truncate(to size: UInt64) throws(Errno) {
        try SystemCall.ftruncate(rawValue, to: size)
    }

    /// `fstat(2)`: the open file's status.
    package func stat() throws(Errno) -> Glibc.stat {
        try SystemCall.fstat(rawValue)
    }

    /// Takes a `flock(2)` lock, waiting for it.
    package func lock(_ kind: SystemCall.LockKind) throws(Errno) {
        try SystemCall.lock(rawValue, kind)
    }

    /// Takes a `flock(2)` lock if nobody holds a conflicting one: false if someone does.
    package func tryLock(_ kind: SystemCall.LockKind) throws(Errno) -> Bool {
        try SystemCall.tryLock(rawValue, kind)
    }

    /// Releases the `flock(2)` lock.
    package func unlock() throws(Errno) {
        try SystemCall.unlock(rawValue)
    }
}
