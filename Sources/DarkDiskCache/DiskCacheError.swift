import DarkDiskSystem
import Foundation

/// The error type of `DiskCache`: a stable code for programs and a one-line message for people.
///
/// A missing, expired, corrupt or half-written entry is never an error: it is a miss (`nil`).
public struct DiskCacheError: DarkDiskFailure, Equatable, LocalizedError {
    public var systemErrno: Errno? { errno.map(Errno.init(rawValue:)) }

    public enum Code: String, Sendable, Equatable {
        /// An argument is outside what the operation accepts (a cache name with a `/`, a negative limit).
        case invalidArgument
        /// A system call failed (disk full, permissions); `errno` says why.
        case io
        /// The index database failed.
        case database
        /// A value could not be encoded, or a stored value does not decode as the type asked for.
        case coding
    }

    public let code: Code
    public let message: String
    /// The POSIX errno behind an `.io` error, if any.
    public let errno: Int32?

    public init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    public var errorDescription: String? { message }

    /// An `.io` error for a failed system call on `path`, carrying the current `errno`.
    static func posix(_ what: String, path: String, errno code: Int32 = Foundation.errno) -> DiskCacheError {
        DiskCacheError(.io, "\(what) \(path): \(String(cString: strerror(code)))", errno: code)
    }
}
