#if canImport(Glibc)
import Glibc
#endif

/// A POSIX error number, captured the moment a system call failed (swift-system's `Errno`): the value every
/// module's error types carry, and the one the FUSE layer hands back to the kernel.
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The calling thread's `errno` now: read it before any other call can change it.
    public static var current: Errno { Errno(rawValue: Glibc.errno) }

    /// `strerror`'s text ("No space left on device").
    public var description: String { String(cString: strerror(rawValue)) }

    public static let interrupted = Errno(rawValue: EINTR)
    public static let wouldBlock = Errno(rawValue: EWOULDBLOCK)
    public static let noSuchFile = Errno(rawValue: ENOENT)
    public static let fileExists = Errno(rawValue: EEXIST)
    public static let noSpace = Errno(rawValue: ENOSPC)
    public static let crossDevice = Errno(rawValue: EXDEV)
}
