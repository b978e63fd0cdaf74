import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A read-only remote served over HTTP(S) by any server with Range and ETag support (nginx, a CDN).
/// Listing a folder (`pull`) needs a JSON directory index, as nginx gives with `autoindex on;
/// autoindex_format json;`. Ranged reads send `If-Match`; a server that ignores the range (200) is handled
/// by skipping to the range; 412 means the object changed; 403/404 mean not found; connection failures
/// and 5xx answers are retried with backoff and then reported as unreachable.
public struct HTTPRemote: Remote {
    public let url: String
    private let base: String
    private let client: HTTPClient
    private let timeout: TimeAmount
    private let attempts: Int

    public init(url: String, client: HTTPClient = .shared, timeout: TimeAmount = .seconds(30), attempts: Int = 3) {
        self.url = url
        self.base = url.hasSuffix("/") ? String(url.dropLast()) : url
        self.client = client
        self.timeout = timeout
        self.attempts = max(1, attempts)
    }

    public func list(prefix: String) async throws(RemoteError) -> [ObjectInfo] {
        let folder = prefix.hasSuffix("/") ? prefix : (prefix as NSString).deletingLastPathComponent + "/"
        try RemoteKey.check(folder == "/" ? "x" : String(folder.dropLast()))
        let (status, headers, body) = try await request(.GET, folder, headers: ["Accept": "application/json"], limit: 64 << 20)
        if status == .notFound { return [] }
        guard status == .ok else { throw RemoteError(.invalidResponse, "listing \(base)/\(folder) answered \(status.code)") }
        struct Entry: Decodable { let name: String; let type: String; let size: UInt64? }
        guard headers.first(name: "Content-Type")?.contains("json") == true,
              let entries = try? JSONDecoder().decode([Entry].self, from: body) else {
            throw RemoteError(.invalidResponse, "\(base)/\(folder) is not a JSON directory index (nginx: autoindex on; autoindex_format json;)")
        }
        return entries.filter { $0.type == "file" }.map { ObjectInfo(key: folder + $0.name, size: $0.size ?? 0, etag: "") }
            .filter { $0.key.hasPrefix(prefix) }.sorted { $0.key < $1.key }
    }

    public func info(_ key: String) async throws(RemoteError) -> ObjectInfo? {
        try RemoteKey.check(key)
        let (status, headers, _) = try await request(.HEAD, key, headers: [:], limit: 0)
        switch status {
        case .ok:
            guard let length = headers.first(name: "Content-Length").flatMap(UInt64.init), let etag = headers.first(name: "ETag") else {
                throw RemoteError(.invalidResponse, "\(base)/\(key) has no length or ETag")
            }
            return ObjectInfo(key: key, size: length, etag: etag)
        case .notFound, .forbidden:
            return nil
        default:
            throw RemoteError(.invalidResponse, "HEAD \(base)/\(key) answered \(status.code)")
        }
    }

    public func read(_ key: String, range: Range<UInt64>, ifMatch etag: String?,
                     consume: (UnsafeRawBufferPointer) throws(RemoteError) -> Void) async throws(RemoteError) {
        try RemoteKey.check(key)
        // A transient failure mid-body is retried for the rest of the range only: what was delivered stays.
        // Only failures that delivered nothing count against `attempts`, so a flaky link still finishes.
        var position = range.lowerBound
        var failures = 0
        var delay: UInt64 = 100_000_000
        while position < range.upperBound {
            let before = position
            do {
                try await ranged(key, range: position..<range.upperBound, etag: etag) { (bytes: UnsafeRawBufferPointer) throws(RemoteError) in
                    try consume(bytes)
                    position += UInt64(bytes.count)
                }
            } catch where error.code == .unreachable {
                if position > before { failures = 0; delay = 100_000_000 }
                failures += 1
                guard failures < attempts else { throw error }
                try? await Task.sleep(nanoseconds: delay)
                delay *= 4
            }
        }
    }

    public func write(_ key: String, fromFile path: String) async throws(RemoteError) -> ObjectInfo {
        throw RemoteError(.io, "\(url) is an http remote, which is read-only: push to the bucket behind it")
    }

    public func write(_ key: String, data: Data) async throws(RemoteError) -> ObjectInfo {
        throw RemoteError(.io, "\(url) is an http remote, which is read-only: push to the bucket behind it")
    }

    public func delete(_ key: String) async throws(RemoteError) {
        throw RemoteError(.io, "\(url) is an http remote, which is read-only")
    }

    /// One ranged GET, streaming the body (backpressure) and never delivering more or fewer bytes than asked.
    private func ranged(_ key: String, range: Range<UInt64>, etag: String?,
                        consume: (UnsafeRawBufferPointer) throws(RemoteError) -> Void) async throws(RemoteError) {
        var headers = ["Range": "bytes=\(range.lowerBound)-\(range.upperBound - 1)"]
        if let etag { headers["If-Match"] = etag }
        let request = makeRequest(.GET, key, headers: headers)
        do {
            let response = try await client.execute(request, timeout: timeout)
            switch response.status {
            case .partialContent:
                let expected = "bytes \(range.lowerBound)-\(range.upperBound - 1)/"
                guard response.headers.first(name: "Content-Range")?.hasPrefix(expected) == true else {
                    throw RemoteError(.invalidResponse, "\(base)/\(key) answered another range than \(range)")
                }
                try await deliver(response.body, skip: 0, count: UInt64(range.count), key: key, consume: consume)
            case .ok:
                // The server ignored the range: check the version, then skip to the part we want.
                if let etag, let actual = response.headers.first(name: "ETag"), actual != etag {
                    throw RemoteError(.changed, "\(key) changed in \(url)")
                }
                try await deliver(response.body, skip: range.lowerBound, count: UInt64(range.count), key: key, consume: consume)
            case .preconditionFailed:
                throw RemoteError(.changed, "\(key) changed in \(url)")
            case .notFound, .forbidden:
                throw RemoteError(.notFound, "\(key) is not in \(url) (\(response.status.code))")
            case .rangeNotSatisfiable:
                throw RemoteError(.invalidResponse, "\(base)/\(key) is shorter than the range \(range)")
            default:
                if response.status.code >= 500 { throw RemoteError(.unreachable, "\(base)/\(key) answered \(response.status.code)") }
                throw RemoteError(.invalidResponse, "GET \(base)/\(key) answered \(response.status.code)")
            }
        } catch let error as RemoteError {
            throw error
        } catch {
            throw RemoteError(.unreachable, "\(url) cannot be reached: \(error)")
        }
    }

    /// Hands the body to `consume` buffer by buffer after skipping `skip` bytes; a body that ends early is
    /// `.unreachable` (a cut connection, retried for the rest), one that runs long is `.invalidResponse`.
    private func deliver(_ body: HTTPClientResponse.Body, skip: UInt64, count: UInt64, key: String,
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
                guard skip > 0 else { throw RemoteError(.invalidResponse, "\(base)/\(key) sent more bytes than asked") }
                buffer = buffer.getSlice(at: buffer.readerIndex, length: Int(wanted)) ?? ByteBuffer()
            }
            try buffer.withUnsafeReadableBytes { (bytes: UnsafeRawBufferPointer) throws(RemoteError) in try consume(bytes) }
            delivered += UInt64(buffer.readableBytes)
            if delivered == count && skip > 0 { return }
        }
        guard delivered == count else {
            throw RemoteError(.unreachable, "\(base)/\(key): the body ended after \(delivered) of \(count) bytes")
        }
    }

    private func request(_ method: HTTPMethod, _ key: String, headers: [String: String], limit: Int) async throws(RemoteError) -> (HTTPResponseStatus, HTTPHeaders, Data) {
        try await retrying { () throws(RemoteError) -> (HTTPResponseStatus, HTTPHeaders, Data) in
            do {
                let response = try await client.execute(makeRequest(method, key, headers: headers), timeout: timeout)
                if response.status.code >= 500 { throw RemoteError(.unreachable, "\(base)/\(key) answered \(response.status.code)") }
                let body = method == .HEAD ? ByteBuffer() : try await response.body.collect(upTo: limit)
                return (response.status, response.headers, Data(body.readableBytesView))
            } catch let error as RemoteError {
                throw error
            } catch {
                throw RemoteError(.unreachable, "\(url) cannot be reached: \(error)")
            }
        }
    }

    private func makeRequest(_ method: HTTPMethod, _ key: String, headers: [String: String]) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: base + "/" + key)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        return request
    }

    /// Retries transient failures (unreachable, 5xx) with exponential backoff.
    private func retrying<T>(_ body: () async throws(RemoteError) -> T) async throws(RemoteError) -> T {
        var delay: UInt64 = 100_000_000
        for attempt in 1... {
            do {
                return try await body()
            } catch where error.code == .unreachable && attempt < attempts {
                try? await Task.sleep(nanoseconds: delay)
                delay *= 4
            }
        }
        fatalError("unreachable: the loop returns or throws")
    }
}
