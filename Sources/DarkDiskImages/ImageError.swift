import DarkDiskSystem
import Foundation

/// The error type of the image manager: a stable code for programs and a one-line message for people.
///
/// Errors are never cached: only a definite "no image" (a node without a thumbnail, an identity without an
/// avatar) is remembered as a negative result.
public struct ImageError: DarkDiskFailure, Equatable, LocalizedError {
    public enum Code: String, Sendable, Equatable {
        /// The bytes are not an image libvips can decode (unknown format, damaged, truncated).
        case undecodable
        /// libvips failed while resizing, cropping or encoding.
        case processing
        /// The image is neither on local disk nor obtainable: the node or user is unknown here, or there is
        /// no remote to download from.
        case notAvailable
        /// The download failed (unreachable remote, changed object, damaged ciphertext); worth retrying.
        case download
        /// The store (DiskManager) failed.
        case store
        /// An argument is outside what the operation accepts (a zero size, a bad identifier).
        case invalidArgument
        /// A custom processor threw an error that is not an `ImageError`.
        case processorFailed
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var errorDescription: String? { message }
}
