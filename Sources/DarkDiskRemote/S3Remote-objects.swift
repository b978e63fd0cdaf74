import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Listing, info, ranged reads and deletion of objects in an S3 remote.
extension S3Remote {
    /// ListObjectsV2 under the remote's prefix, following continuation tokens page after page.
    public func list(prefix listPrefix: String) async throws(RemoteError) -> [ObjectInfo] {
        if !listPrefix.isEmpty { try RemoteKey.check(listPrefix) }
        let keyPrefix = prefix.isEmpty ? "" : prefix + "/"
        var result: [ObjectInfo] = []
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("prefix", keyPrefix + listPrefix)]
            if let listPageSize { query.append(("max-keys", String(listPageSize))) }
            if let token { query.append(("continuation-token", token)) }
            let response = try await perform(.GET, path: rootPath, query: query, limit: 64 << 20)
            guard response.status == .ok else { throw failure(response, "listing \(listPrefix)") }
            let page = try S3ListPage(response.body, keyPrefix: keyPrefix, remote: url)
            result += page.objects
            guard page.nextToken == nil || page.nextToken != token else {
                throw RemoteError(.invalidResponse, "\(url): the listing of \(listPrefix) repeats its continuation token")
            }
            token = page.nextToken
        } while token != nil
        return result.sorted { $0.key < $1.key }
    }

    /// HEAD of the object. A 404 is nil only once the bucket is known to exist: a missing bucket or refused
    /// credentials (a 403, which is what S3 answers for a wrong signature on HEAD) are errors, never nil.
    public func info(_ key: String) async throws(RemoteError) -> ObjectInfo? {
        try RemoteKey.check(key)
        let response = try await perform(.HEAD, path: objectPath(key))
        switch response.status {
        case .ok:
            guard let length = response.headers.first(name: "Content-Length").flatMap(UInt64.init),
                  let etag = response.headers.first(name: "ETag") else {
                throw RemoteError(.invalidResponse, "\(url): HEAD \(key) has no length or ETag")
            }
            return ObjectInfo(key: key, size: length, etag: etag)
        case .notFound:
            let bucketHead = try await perform(.HEAD, path: rootPath)
            switch bucketHead.status {
            case .ok: return nil
            case .notFound: throw noSuchBucket()
            default: throw await diagnose(bucketHead, "the bucket '\(bucket)'")
            }
        default:
            throw await diagnose(response, "HEAD \(key)")
        }
    }

    public func read(_ key: String, range: Range<UInt64>, ifMatch etag: String?,
                     consume: (UnsafeRawBufferPointer) throws(RemoteError) -> Void) async throws(RemoteError) {
        try RemoteKey.check(key)
        try await transport.read(range, etag: etag, name: "\(url): GET \(key)", request: { rest in
            var headers = [("Range", "bytes=\(rest.lowerBound)-\(rest.upperBound - 1)")]
            if let etag { headers.append(("If-Match", etag)) }
            return makeRequest(.GET, path: objectPath(key), query: [], headers: headers, payload: .none)
        }, unexpected: { response in
            let body = (try? await response.body.collect(upTo: 1 << 20)) ?? ByteBuffer()
            let collected = Response(status: response.status, headers: response.headers, body: Data(body.readableBytesView))
            if collected.status == .notFound, S3XML.parse(collected.body)?.text("Code") != "NoSuchBucket" {
                return RemoteError(.notFound, "\(key) is not in \(url)")
            }
            return failure(collected, "GET \(key)")
        }, consume: consume)
    }

    /// DELETE; S3 answers 204 whether or not the object existed, some servers 404 for a missing key. A
    /// `.matches` condition is `If-Match` with the ETag unquoted; a 412, or a 404 to it, is `.preconditionFailed`.
    public func delete(_ key: String, condition: WriteCondition) async throws(RemoteError) {
        try RemoteKey.check(key)
        var headers: [(String, String)] = []
        switch condition {
        case .none: break
        case .absent: throw RemoteError(.invalidURL, "a delete cannot be conditioned on the object being absent")
        case .matches(let etag): headers.append(("If-Match", etag.replacingOccurrences(of: "\"", with: "")))
        }
        let response = try await perform(.DELETE, path: objectPath(key), headers: headers)
        if !headers.isEmpty, response.status == .preconditionFailed
            || (response.status == .notFound && S3XML.parse(response.body)?.text("Code") != "NoSuchBucket") {
            throw RemoteError(.preconditionFailed, "\(url): \(key) is not as this delete expected (it changed or went)")
        }
        switch response.status {
        case .noContent, .ok:
            return
        case .notFound where S3XML.parse(response.body)?.text("Code") != "NoSuchBucket":
            return
        default:
            throw failure(response, "deleting \(key)")
        }
    }
}
