import DarkDiskSystem
#if canImport(Glibc)
import Glibc
#endif

/// The error type of `DarkDiskCrypto`: a stable code for programs, a one-line message for people, and
/// where it happened (section and chunk for chunk failures, `errno` for I/O) so callers can log it.
public struct CryptoError: DarkDiskFailure, Equatable {
    public var systemErrno: Errno? { errno.map(Errno.init(rawValue:)) }

    /// What went wrong, independent of the message wording.
    public enum Code: Sendable, Equatable {
        /// A key does not have exactly 32 bytes.
        case invalidKey
        /// The header tag does not verify: the key is wrong or the header was corrupted.
        case wrongKey
        /// The file does not start with the darkdisk magic.
        case badMagic
        /// The file was written by a format version this code does not know.
        case unsupportedVersion
        /// A header field has a value the format does not allow.
        case malformedHeader
        /// The file is shorter than its header says.
        case truncated
        /// The file is longer than its header says.
        case extended
        /// A chunk's tag does not verify (tampered, swapped, copied from another file or corrupted).
        case chunkAuthenticationFailed
        /// A section or offset outside the file, or a call the object's state does not allow.
        case outOfRange
        /// A wrapped key is malformed (wrong length).
        case corrupt
        /// A system call failed; `errno` says why.
        case io
        /// OpenSSL reported an unexpected failure.
        case openssl
    }

    public let code: Code
    public let message: String
    /// The section of a failed chunk.
    public let section: Int?
    /// The index (within its section) of a failed chunk.
    public let chunk: UInt64?
    /// The POSIX errno behind an `.io` error.
    public let errno: Int32?

    public init(_ code: Code, _ message: String, section: Int? = nil, chunk: UInt64? = nil, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.section = section
        self.chunk = chunk
        self.errno = errno
    }


    /// An `.io` error for a failed system call, naming what failed and carrying `errno`.
    static func posix(_ what: String, errno code: Int32) -> CryptoError {
        CryptoError(.io, "\(what): \(String(cString: strerror(code)))", errno: code)
    }
}
