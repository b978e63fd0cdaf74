import DarkDiskSystem
/// The error type of remotes and transfers: a code programs can branch on and a one-line message.
public struct RemoteError: DarkDiskFailure, Equatable {
    public enum Code: String, Sendable {
        /// The object does not exist (a 404 on HTTP remotes).
        case notFound
        /// The node is neither stored nor in the outline the store last pulled.
        case unknownNode
        /// A pull found no node at all in a remote where the store knows some: refused unless accepted.
        case emptyListing
        /// The server refuses to serve the object (an HTTP 403): it exists, but may not be read.
        case accessDenied
        /// The remote could not be reached; never taken to mean "deleted".
        case unreachable
        /// The object changed (its ETag no longer matches) during a transfer.
        case changed
        /// The remote belongs to another store (another master key), or needs a passphrase to tell.
        case foreignKey
        /// A conditional write found the object not as the write expected (already there, changed, or gone).
        case preconditionFailed
        /// The remote answered something that is not what was asked (wrong length, bad record).
        case invalidResponse
        /// The URL is not a remote darkdisk can use.
        case invalidURL
        /// A local file could not be read or written.
        case io
        /// Not stored locally, and the request may not download it (`FetchPolicy.storedOnly`).
        case notLocal
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

}
