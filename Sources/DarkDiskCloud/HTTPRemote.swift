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

    public func read(_ key: String, range: Range<UInt64>, ifMatch etag: String?) async throws(RemoteError) -> Data {
        try RemoteKey.check(key)
        guard !range.isEmpty else { return Data() }
        var headers = ["Range": "bytes=\(range.lowerBound)-\(range.upperBound - 1)"]
        if let etag { headers["If-Match"] = etag }
        return try await retrying { () throws(RemoteError) -> Data in
            try await ranged(key, range: range, headers: headers, etag: etag)
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

    /// One ranged GET, streaming the body (backpressure) and never accepting more or fewer bytes than asked.
    private func ranged(_ key: String, range: Range<UInt64>, headers: [String: String], etag: String?) async throws(RemoteError) -> Data {
        let request = makeRequest(.GET, key, headers: headers)
        do {
            let response = try await client.execute(request, timeout: timeout)
            switch response.status {
            case .partialContent:
                let expected = "bytes \(range.lowerBound)-\(range.upperBound - 1)/"
                guard response.headers.first(name: "Content-Range")?.hasPrefix(expected) == true else {
                    throw RemoteError(.invalidResponse, "\(base)/\(key) answered another range than \(range)")
                }
                return try await collect(response.body, skip: 0, count: range.count, key: key)
            case .ok:
                // The server ignored the range: check the version, then skip to the part we want.
                if let etag, let actual = response.headers.first(name: "ETag"), actual != etag {
                    throw RemoteError(.changed, "\(key) changed in \(url)")
                }
                return try await collect(response.body, skip: range.lowerBound, count: range.count, key: key)
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

    private func collect(_ body: HTTPClientResponse.Body, skip: UInt64, count: Int, key: String) async throws -> Data {
        var data = Data()
        data.reserveCapacity(count)
        var toSkip = skip
        for try await var buffer in body {
            if toSkip > 0 {
                let dropped = Int(min(UInt64(buffer.readableBytes), toSkip))
                buffer.moveReaderIndex(forwardBy: dropped)
                toSkip -= UInt64(dropped)
            }
            let wanted = count - data.count
            if buffer.readableBytes > wanted {
                guard skip > 0 else { throw RemoteError(.invalidResponse, "\(base)/\(key) sent more bytes than asked") }
                data.append(contentsOf: buffer.readableBytesView.prefix(wanted))
                return data
            }
            data.append(contentsOf: buffer.readableBytesView)
        }
        guard data.count == count else {
            throw RemoteError(.invalidResponse, "\(base)/\(key): the body ended after \(data.count) of \(count) bytes")
        }
        return data
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
