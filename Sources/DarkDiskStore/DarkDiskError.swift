import DarkDiskSystem
import Foundation

/// The error type of the store: a stable code for programs and a one-line message for people.
public struct DarkDiskError: DarkDiskFailure, Equatable, LocalizedError {
    public var systemErrno: Errno? { errno.map(Errno.init(rawValue:)) }

    public enum Code: String, Sendable, Equatable {
        /// An ID does not match its allowed character set or length.
        case invalidID
        /// An argument is outside what the operation accepts.
        case invalidArgument
        /// No store exists at the resolved location.
        case storeNotFound
        /// `init` found a store already there.
        case storeExists
        /// The key file is missing, malformed, or has unsafe permissions.
        case keyFile
        /// The store's key is passphrase-protected and no passphrase was given.
        case passphraseRequired
        /// The passphrase does not unwrap the master key.
        case wrongPassphrase
        /// The requested file is not stored locally.
        case notFound
        /// An encrypted file failed to decrypt (tampering, truncation, wrong key).
        case corrupt
        /// A system call failed; `errno` says why.
        case io
        /// The index database failed.
        case database
        /// More data than allowed: a cache import past its pool's max size (`DiskImport.sizeLimit`).
        case tooLarge
        /// The drive already has an entry of that name in that folder.
        case exists
        /// A drive folder that is to go, or to be replaced, still holds entries.
        case notEmpty
        /// A drive entry that had to be a folder is not one.
        case notDirectory
        /// A drive entry that must not be a folder is one.
        case isDirectory
        /// The drive does not allow the operation (hard links, device files, FIFOs, another owner).
        case notPermitted
        /// A name longer than 255 bytes.
        case nameTooLong
        /// The thing is kept for a reason that outlasts the request: a change not uploaded yet, a pin.
        case busy
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
    static func posix(_ what: String, path: String, errno code: Int32 = Foundation.errno) -> DarkDiskError {
        DarkDiskError(.io, "\(what) \(path): \(String(cString: strerror(code)))", errno: code)
    }
}
