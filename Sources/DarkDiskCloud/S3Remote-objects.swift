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

    /// DELETE; S3 answers 204 whether or not the object existed, some servers 404 for a missing key.
    public func delete(_ key: String) async throws(RemoteError) {
        try RemoteKey.check(key)
        let response = try await perform(.DELETE, path: objectPath(key))
        switch response.status {
        case .noContent, .ok:
            return
        case .notFound where S3XML.parse(response.body)?.text("Code") != "NoSuchBucket":
            return
        default:
            throw failure(response, "deleting \(key)")
        }
    }

    /// One ranged GET, streaming the body (backpressure) and never delivering more or fewer bytes than asked.
    private func ranged(_ key: String, range: Range<UInt64>, etag: String?,
                        consume: (UnsafeRawBufferPointer) throws(RemoteError) -> Void) async throws(RemoteError) {
        var headers = [("Range", "bytes=\(range.lowerBound)-\(range.upperBound - 1)")]
        if let etag { headers.append(("If-Match", etag)) }
        let request = makeRequest(.GET, path: objectPath(key), query: [], headers: headers, payload: .none)
        do {
            let response = try await client.execute(request, timeout: timeout)
            switch response.status {
            case .partialContent:
                let expected = "bytes \(range.lowerBound)-\(range.upperBound - 1)/"
                guard response.headers.first(name: "Content-Range")?.hasPrefix(expected) == true else {
                    throw RemoteError(.invalidResponse, "\(url): GET \(key) answered another range than \(range)")
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
            case .rangeNotSatisfiable:
                throw RemoteError(.invalidResponse, "\(url): \(key) is shorter than the range \(range)")
            default:
                let body = try await response.body.collect(upTo: 1 << 20)
                let collected = Response(status: response.status, headers: response.headers, body: Data(body.readableBytesView))
                if collected.status == .notFound, S3XML.parse(collected.body)?.text("Code") != "NoSuchBucket" {
                    throw RemoteError(.notFound, "\(key) is not in \(url)")
                }
                throw failure(collected, "GET \(key)")
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
                guard skip > 0 else { throw RemoteError(.invalidResponse, "\(url): GET \(key) sent more bytes than asked") }
                buffer = buffer.getSlice(at: buffer.readerIndex, length: Int(wanted)) ?? ByteBuffer()
            }
            try buffer.withUnsafeReadableBytes { (bytes: UnsafeRawBufferPointer) throws(RemoteError) in try consume(bytes) }
            delivered += UInt64(buffer.readableBytes)
            if delivered == count && skip > 0 { return }
        }
        guard delivered == count else {
            throw RemoteError(.unreachable, "\(url): GET \(key): the body ended after \(delivered) of \(count) bytes")
        }
    }
}
