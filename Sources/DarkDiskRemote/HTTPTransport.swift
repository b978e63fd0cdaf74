import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif
import NIOHTTP1
import DarkDiskSync

/// The HTTP mechanics the http and s3 remotes share: a client whose read timeout also bounds a stall in the
/// middle of a body, retries with backoff, and ranged GETs streamed to a consumer that resume after a cut
/// connection for the rest of the range only.
struct HTTPTransport: Sendable {
    let client: HTTPClient
    /// Time allowed until a response's head; after that the client's read timeout bounds every silence.
    let timeout: TimeAmount
    /// Tries per request (and, for reads, per stretch of failures that delivered nothing).
    let attempts: Int

    /// Whether `client` is a shared one of this transport's making (not one the caller gave).
    let ownsClient: Bool

    /// `client` nil: a shared client whose read timeout is `timeout`.
    init(client: HTTPClient?, timeout: TimeAmount, attempts: Int) {
        self.client = client ?? Self.client(readTimeout: timeout)
        self.ownsClient = client == nil
        self.timeout = timeout
        self.attempts = max(1, attempts)
    }

    /// The client for a request the server may take up to `patience` to answer without sending a byte
    /// (S3's CompleteMultipartUpload assembles the whole object first): a shared client with that read
    /// timeout, unless the caller gave its own.
    func client(patience: TimeAmount) -> HTTPClient {
        ownsClient && patience > timeout ? Self.client(readTimeout: patience) : client
    }

    private static let clients = Locked<[Int64: HTTPClient]>([:])

    /// One client per read timeout, shared by every remote in the process and kept for its lifetime (so it
    /// is never shut down while a remote uses it).
    static func client(readTimeout: TimeAmount) -> HTTPClient {
        clients.withLock { clients in
            if let client = clients[readTimeout.nanoseconds] { return client }
            var configuration = HTTPClient.Configuration()
            configuration.timeout = .init(connect: .seconds(10), read: readTimeout)
            // A connection that cannot be made fails its request at once (refused, unreachable host): the
            // pool's own retries held it until the request's deadline (58 s for an s3 endpoint that refused),
            // and its backoff could keep a server that came back unasked for many seconds. Retries are ours.
            configuration.connectionPool.retryConnectionEstablishment = false
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            clients[readTimeout.nanoseconds] = client
            return client
        }
    }

    /// Runs `body`, retrying `.unreachable` failures (lost connections, 5xx) with exponential backoff.
    /// A refused connection is tried `refusedAttempts` times at most (a server restarting), not `attempts`; a
    /// server that stopped answering (`isStall`) is not asked again: it is unreachable now, and asking again
    /// would keep the caller waiting `attempts` times the timeout.
    func retrying<T>(_ body: () async throws(RemoteError) -> T) async throws(RemoteError) -> T {
        var delay: UInt64 = 100_000_000
        for attempt in 1... {
            do {
                return try await body()
            } catch where error.code == .unreachable && attempt < allowedAttempts(after: error) {
                await RetryWakeup.sleep(nanoseconds: delay)
                delay *= 4
            }
        }
        fatalError("unreachable: the loop returns or throws")
    }

    /// Streams bytes `range` of an object to `consume` through ranged GETs built by `request` (with
    /// `If-Match: etag` when given). A body cut mid-way is asked again for the rest of the range; only
    /// failures that delivered nothing count against `attempts`, so a flaky link still finishes; a request
    /// that got no byte for the timeout is not asked again (`isStall`). Answers
    /// other than 206, 200, 412 and 416 become the error `unexpected` makes of them.
    func read(_ range: Range<UInt64>, etag: String?, name: String,
              request: (Range<UInt64>) -> HTTPClientRequest,
              unexpected: (HTTPClientResponse) async -> RemoteError,
              consume: (UnsafeRawBufferPointer) throws(RemoteError) -> Void) async throws(RemoteError) {
        var position = range.lowerBound
        var failures = 0
        var delay: UInt64 = 100_000_000
        while position < range.upperBound {
            let before = position
            do {
                let rest = position..<range.upperBound
                try await get(rest, etag: etag, name: name, request: request(rest), unexpected: unexpected) {
                    (bytes: UnsafeRawBufferPointer) throws(RemoteError) in
                    try consume(bytes)
                    position += UInt64(bytes.count)
                }
            } catch where error.code == .unreachable {
                let progressed = position > before
                if progressed { failures = 0; delay = 100_000_000 }
                failures += 1
                // (A stall after some bytes is a body that stopped: the rest is asked again. One that brought
                // nothing is a server that stopped answering.)
                guard failures < (progressed && Self.isStall(error) ? attempts : allowedAttempts(after: error)) else { throw error }
                await RetryWakeup.sleep(nanoseconds: delay)
                delay *= 4
            }
        }
    }

    /// One ranged GET, its body streamed (backpressure) and never delivering more or fewer bytes than asked.
    private func get(_ range: Range<UInt64>, etag: String?, name: String, request: HTTPClientRequest,
                     unexpected: (HTTPClientResponse) async -> RemoteError,
                     consume: (UnsafeRawBufferPointer) throws(RemoteError) -> Void) async throws(RemoteError) {
        do {
            let response = try await client.execute(request, timeout: timeout)
            switch response.status {
            case .partialContent:
                let expected = "bytes \(range.lowerBound)-\(range.upperBound - 1)/"
                guard response.headers.first(name: "Content-Range")?.hasPrefix(expected) == true else {
                    throw RemoteError(.invalidResponse, "\(name) answered another range than \(range)")
                }
                try await deliver(response.body, skip: 0, count: UInt64(range.count), wholeObject: false, name: name, consume: consume)
            case .ok:
                // The server ignored the range and sends the whole object: check the version, then skip to
                // the range and stop reading after it.
                if let etag, let actual = response.headers.first(name: "ETag"), actual != etag {
                    throw RemoteError(.changed, "\(name) changed")
                }
                try await deliver(response.body, skip: range.lowerBound, count: UInt64(range.count), wholeObject: true, name: name, consume: consume)
            case .preconditionFailed:
                throw RemoteError(.changed, "\(name) changed")
            case .rangeNotSatisfiable:
                throw RemoteError(.invalidResponse, "\(name) is shorter than the range \(range)")
            default:
                throw await unexpected(response)
            }
        } catch let error as RemoteError {
            throw error
        } catch {
            throw RemoteError(.unreachable, "\(name) cannot be reached: \(describe(error))")
        }
    }

    /// How many tries a request that failed with `error` gets in all.
    private func allowedAttempts(after error: RemoteError) -> Int {
        if Self.isStall(error) { return 1 }
        return Self.isRefusal(error) ? min(attempts, Self.refusedAttempts) : attempts
    }

    /// Whether `error` says the server stopped answering: nothing came for the transport's timeout.
    static func isStall(_ error: RemoteError) -> Bool {
        error.message.hasSuffix(stallText)
    }

    private static let stallText = " (the server stalls)"

    /// `describe(_:)`, with a stall said with this transport's timeout.
    func describe(_ error: any Error) -> String {
        let seconds = String(format: "%g", Double(timeout.nanoseconds) / 1e9)
        if let client = error as? HTTPClientError, client == .readTimeout {
            return "it stopped answering: nothing came for \(seconds) s" + Self.stallText
        }
        if let client = error as? HTTPClientError, client == .deadlineExceeded {
            return "no answer within \(seconds) s of the request being sent" + Self.stallText
        }
        return Self.describe(error)
    }

    /// Tries of a request whose connection was refused: a server restarting gets a moment, a server that
    /// is not there is reported at once rather than after the whole backoff.
    static let refusedAttempts = 2

    static func isRefusal(_ error: RemoteError) -> Bool {
        error.message.hasSuffix(refusalText)
    }

    private static let refusalText = "connection refused (is the server running?)"

    /// A connection failure in words a user reads (NIO says "connection reset (error set): Connection refused
    /// (errno: 111)" for a refusal).
    static func describe(_ error: any Error) -> String {
        if let connection = error as? NIOConnectionError {
            let refused = connection.connectionErrors.contains { ($0.error as? IOError)?.errnoCode == ECONNREFUSED }
            if refused { return "\(connection.host):\(connection.port): \(refusalText)" }
            if let first = connection.connectionErrors.first { return "\(connection.host):\(connection.port): \(describe(first.error))" }
            if let dns = connection.dnsAAAAError ?? connection.dnsAError { return "\(connection.host): host not found (\(dns))" }
        }
        if let io = error as? IOError {
            if io.errnoCode == ECONNREFUSED { return refusalText }
            return String(cString: strerror(io.errnoCode)).lowercased()
        }
        if let client = error as? HTTPClientError, client == .connectTimeout { return "the connection timed out" }
        return "\(error)"
    }

    /// Hands the body to `consume` buffer by buffer after skipping `skip` bytes. A body that ends early is
    /// `.unreachable` (a cut connection, asked again for the rest); one that runs long is `.invalidResponse`,
    /// unless it is the whole object (a 200), whose tail is dropped.
    private func deliver(_ body: HTTPClientResponse.Body, skip: UInt64, count: UInt64, wholeObject: Bool, name: String,
                         consume: (UnsafeRawBufferPointer) throws(RemoteError) -> Void) async throws {
        var toSkip = skip
        var delivered: UInt64 = 0
        for try await var buffer in body {
            if toSkip > 0 {
                let dropped = Int(min(UInt64(buffer.readableBytes), toSkip))
                buffer.moveReaderIndex(forwardBy: dropped)
                toSkip -= UInt64(dropped)
            }
            let wanted = count - delivered
            if UInt64(buffer.readableBytes) > wanted {
                guard wholeObject else { throw RemoteError(.invalidResponse, "\(name) sent more bytes than asked") }
                buffer = buffer.getSlice(at: buffer.readerIndex, length: Int(wanted)) ?? ByteBuffer()
            }
            try buffer.withUnsafeReadableBytes { (bytes: UnsafeRawBufferPointer) throws(RemoteError) in try consume(bytes) }
            delivered += UInt64(buffer.readableBytes)
            if wholeObject && delivered == count { return }
        }
        guard delivered == count else {
            throw RemoteError(.unreachable, "\(name): the body ended after \(delivered) of \(count) bytes")
        }
    }
}
