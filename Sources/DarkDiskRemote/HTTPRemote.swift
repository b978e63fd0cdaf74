import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A read-only remote served over HTTP(S) by any server with Range and ETag support (nginx, a CDN).
/// Listing a folder (`pull`) needs a JSON directory index, as nginx gives with `autoindex on;
/// autoindex_format json;`. Ranged reads send `If-Match`; a server that ignores the range (200) is handled
/// by skipping to the range; 412 means the object changed; 403/404 mean not found; connection failures,
/// stalls longer than `timeout` and 5xx answers are retried with backoff and then reported as unreachable.
public struct HTTPRemote: Remote {
    public let url: String
    private let base: String
    private let transport: HTTPTransport

    /// `client` nil: a shared client whose read timeout is `timeout`, so a server that stalls mid-body is
    /// given up on (and asked again) after that long.
    public init(url: String, client: HTTPClient? = nil, timeout: TimeAmount = .seconds(30), attempts: Int = 5) {
        self.url = url
        self.base = url.hasSuffix("/") ? String(url.dropLast()) : url
        self.transport = HTTPTransport(client: client, timeout: timeout, attempts: attempts)
    }

    public func list(prefix: String) async throws(RemoteError) -> [ObjectInfo] {
        let folder = prefix.hasSuffix("/") ? prefix : (prefix as NSString).deletingLastPathComponent + "/"
        try RemoteKey.check(folder == "/" ? "x" : String(folder.dropLast()))
        let (status, headers, body) = try await request(.GET, folder, headers: ["Accept": "application/json"], limit: 64 << 20)
        if status == .notFound { return [] }
        if status == .forbidden { throw Self.accessDenied(base + "/" + folder) }
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
        case .notFound:
            return nil
        case .forbidden:
            throw Self.accessDenied(base + "/" + key)
        default:
            throw RemoteError(.invalidResponse, "HEAD \(base)/\(key) answered \(status.code)")
        }
    }

    public func read(_ key: String, range: Range<UInt64>, ifMatch etag: String?,
                     consume: (UnsafeRawBufferPointer) throws(RemoteError) -> Void) async throws(RemoteError) {
        try RemoteKey.check(key)
        try await transport.read(range, etag: etag, name: "\(base)/\(key)", request: { rest in
            var headers = ["Range": "bytes=\(rest.lowerBound)-\(rest.upperBound - 1)"]
            if let etag { headers["If-Match"] = etag }
            return makeRequest(.GET, key, headers: headers)
        }, unexpected: { response in
            switch response.status {
            case .notFound: RemoteError(.notFound, "\(key) is not in \(url) (\(response.status.code))")
            case .forbidden: Self.accessDenied(base + "/" + key)
            case let status where status.code >= 500: RemoteError(.unreachable, "\(base)/\(key) answered \(status.code)")
            default: RemoteError(.invalidResponse, "GET \(base)/\(key) answered \(response.status.code)")
            }
        }, consume: consume)
    }

    /// A 403: the object is there but the server may not serve it (a file remote's objects are private to
    /// their owner unless it was made with `?shared=1`).
    static func accessDenied(_ location: String) -> RemoteError {
        RemoteError(.accessDenied, "\(location): access denied (403); if the server serves a darkdisk file:// folder, it must be made readable with file:///PATH?shared=1")
    }

    public func write(_ key: String, fromFile path: String) async throws(RemoteError) -> ObjectInfo {
        throw RemoteError(.io, "\(url) is an http remote, which is read-only: push to the bucket behind it")
    }

    public func write(_ key: String, data: Data, condition: WriteCondition) async throws(RemoteError) -> ObjectInfo {
        throw RemoteError(.io, "\(url) is an http remote, which is read-only: push to the bucket behind it")
    }

    public func delete(_ key: String, condition: WriteCondition) async throws(RemoteError) {
        throw RemoteError(.io, "\(url) is an http remote, which is read-only")
    }

    private func request(_ method: HTTPMethod, _ key: String, headers: [String: String], limit: Int) async throws(RemoteError) -> (HTTPResponseStatus, HTTPHeaders, Data) {
        try await transport.retrying { () throws(RemoteError) -> (HTTPResponseStatus, HTTPHeaders, Data) in
            do {
                let response = try await transport.client.execute(makeRequest(method, key, headers: headers), timeout: transport.timeout)
                if response.status.code >= 500 { throw RemoteError(.unreachable, "\(base)/\(key) answered \(response.status.code)") }
                let body = method == .HEAD ? ByteBuffer() : try await response.body.collect(upTo: limit)
                return (response.status, response.headers, Data(body.readableBytesView))
            } catch let error as RemoteError {
                throw error
            } catch {
                throw RemoteError(.unreachable, "\(url) cannot be reached: \(transport.describe(error))")
            }
        }
    }

    private func makeRequest(_ method: HTTPMethod, _ key: String, headers: [String: String]) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: base + "/" + key)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        return request
    }
}
