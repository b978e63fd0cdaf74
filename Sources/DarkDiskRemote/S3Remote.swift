import AsyncHTTPClient

import DarkDiskCrypto
import Foundation
import NIOCore
import NIOHTTP1

/// A remote in an S3 bucket (AWS S3, MinIO, Ceph RGW, moto), under an optional key prefix, spoken to over
/// the S3 REST API with AWS Signature V4: ListObjectsV2 to list, HEAD for info, ranged GET with If-Match to
/// read, PUT (multipart upload for large files) to write, DELETE. With an endpoint, requests go path-style
/// to `ENDPOINT/BUCKET/KEY` (as MinIO and moto expect); without one, to AWS at
/// `https://BUCKET.s3.REGION.amazonaws.com/KEY`. Errors of configuration (no such bucket, refused
/// credentials, wrong region) are one-line `.invalidURL` errors, never `.notFound`, so a pull never takes a
/// bucket it cannot read for an empty one; 5xx answers and lost connections are retried with backoff, then
/// reported as `.unreachable`.
public struct S3Remote: Remote {
    public let url: String
    public let bucket: String
    /// The key prefix inside the bucket, without leading or trailing slashes ("" for the whole bucket).
    public let prefix: String
    public let region: String
    let scheme: String
    /// The Host header, with the port unless it is the scheme's default (what the signature covers).
    let host: String
    /// "" when the bucket is in the host name (virtual-hosted style), "/BUCKET" in path style.
    let bucketPath: String
    let signer: S3Signer
    let transport: HTTPTransport
    /// Files larger than this are uploaded in parts (multipart upload) of `partSize` bytes.
    let multipartThreshold: UInt64
    let partSize: UInt64
    /// Parts uploaded at the same time.
    let parallelParts: Int
    /// `max-keys` of each listing request (nil: the server's default, 1000 on S3).
    let listPageSize: Int?

    /// A remote for `bucket` under `prefix`. `endpoint` is `http(s)://HOST[:PORT]` of an S3-compatible server
    /// (nil for AWS). Parts of a multipart upload are `partSize` bytes (S3 needs at least 5 MiB but the
    /// last); files up to `multipartThreshold` (default `partSize`) go in one PUT.
    public init(bucket: String, prefix: String = "", region: String = "us-east-1", endpoint: String? = nil,
                credentials: S3Credentials, client: HTTPClient? = nil, timeout: TimeAmount = .seconds(60),
                attempts: Int = 5, partSize: Int = 16 << 20, multipartThreshold: Int? = nil, parallelParts: Int = 4,
                listPageSize: Int? = nil) throws(RemoteError) {
        let bucketCharacters = bucket.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: ".") || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
        }
        guard !bucket.isEmpty, bucket.utf8.count <= 255, bucketCharacters else {
            throw RemoteError(.invalidURL, "invalid S3 bucket name '\(bucket)': an s3 remote needs a bucket, s3://BUCKET/PREFIX")
        }
        let trimmed = prefix.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        if !trimmed.isEmpty { try RemoteKey.check(trimmed) }
        guard !region.isEmpty, region.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == UInt8(ascii: "-") }) else {
            throw RemoteError(.invalidURL, "invalid S3 region '\(region)' (e.g. us-east-1)")
        }
        self.bucket = bucket
        self.prefix = trimmed
        self.region = region
        if let endpoint {
            guard let parsed = URL(string: endpoint), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https",
                  let host = parsed.host, !host.isEmpty, parsed.path.isEmpty || parsed.path == "/", parsed.query == nil else {
                throw RemoteError(.invalidURL, "invalid S3 endpoint '\(endpoint)': use http(s)://HOST[:PORT]")
            }
            let defaultPort = scheme == "https" ? 443 : 80
            self.scheme = scheme
            self.host = parsed.port.map { $0 == defaultPort ? host : "\(host):\($0)" } ?? host
            self.bucketPath = "/" + bucket
        } else if bucket.contains(".") {
            // Dots would break the wildcard TLS certificate of virtual-hosted names: use path style.
            self.scheme = "https"
            self.host = "s3.\(region).amazonaws.com"
            self.bucketPath = "/" + bucket
        } else {
            self.scheme = "https"
            self.host = "\(bucket).s3.\(region).amazonaws.com"
            self.bucketPath = ""
        }
        var text = "s3://\(bucket)/\(trimmed)"
        var options: [String] = []
        if let endpoint { options.append("endpoint=\(endpoint)") }
        if region != "us-east-1" { options.append("region=\(region)") }
        if !options.isEmpty { text += "?" + options.joined(separator: "&") }
        self.url = text
        self.signer = S3Signer(credentials: credentials, region: region)
        self.transport = HTTPTransport(client: client, timeout: timeout, attempts: attempts)
        self.partSize = UInt64(max(partSize, 1))
        self.multipartThreshold = UInt64(max(multipartThreshold ?? partSize, 1))
        self.parallelParts = max(1, parallelParts)
        self.listPageSize = listPageSize
    }

    /// Creates the bucket (in the remote's region); a bucket this account already owns is fine. For setting
    /// up a test server or a new deployment: darkdisk itself never creates buckets.
    public func createBucket() async throws(RemoteError) {
        var body = Data()
        if region != "us-east-1" {
            body = Data(("<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                + "<LocationConstraint>\(region)</LocationConstraint></CreateBucketConfiguration>").utf8)
        }
        let response = try await perform(.PUT, path: bucketPath.isEmpty ? "/" : bucketPath, payload: .data(body))
        let code = S3XML.parse(response.body)?.text("Code")
        guard response.status == .ok || code == "BucketAlreadyOwnedByYou" else {
            throw failure(response, "creating the bucket")
        }
    }

    // MARK: - Paths

    /// The key of `key` in the bucket: the remote's prefix, a slash, the key.
    func bucketKey(_ key: String) -> String { prefix.isEmpty ? key : prefix + "/" + key }

    /// The request path of an object.
    func objectPath(_ key: String) -> String { bucketPath + "/" + bucketKey(key) }

    /// The request path of the bucket itself (listing).
    var rootPath: String { bucketPath.isEmpty ? "/" : bucketPath }

    // MARK: - Requests

    /// A response whose body was collected (error documents, listings, multipart answers).
    struct Response {
        let status: HTTPResponseStatus
        let headers: HTTPHeaders
        let body: Data
    }

    /// What a request sends: nothing, bytes in memory, or a slice of an open file streamed from disk
    /// (with its SHA-256 computed beforehand, as the signature covers it).
    enum Payload: Sendable {
        case none
        case data(Data)
        case file(FileSlice, sha256: String)

        var hash: String {
            switch self {
            case .none: S3Signer.emptyPayloadHash
            case .data(let data): Hex.encode(Digest.sha256(data))
            case .file(_, let sha256): sha256
            }
        }

        var count: UInt64 {
            switch self {
            case .none: 0
            case .data(let data): UInt64(data.count)
            case .file(let slice, _): slice.count
            }
        }
    }

    /// A signed request; the body is made anew for every attempt, so a retry resends it from the start.
    func makeRequest(_ method: HTTPMethod, path: String, query: [(String, String)], headers: [(String, String)],
                     payload: Payload) -> HTTPClientRequest {
        let queryText = S3Signer.canonicalQuery(query)
        var request = HTTPClientRequest(url: "\(scheme)://\(host)\(S3Signer.encodePath(path))" + (query.isEmpty ? "" : "?" + queryText))
        request.method = method
        let signed = signer.sign(method: method.rawValue, host: host, path: path, query: query, headers: headers,
                                 payloadHash: payload.hash, date: Date())
        request.headers.add(name: "Host", value: host)
        for (name, value) in headers + signed { request.headers.add(name: name, value: value) }
        switch payload {
        case .none:
            break
        case .data(let data):
            request.body = .bytes(ByteBuffer(bytes: data))
        case .file(let slice, _):
            request.body = .stream(slice, length: .known(Int64(slice.count)))
        }
        return request
    }

    /// One request with retries of transient failures, its body collected up to `limit` bytes. Answers
    /// other than 5xx are returned for the caller to judge (see `failure`).
    /// `patience`: how long the server may work on the request before its first byte, when that is longer
    /// than the remote's timeout.
    func perform(_ method: HTTPMethod, path: String, query: [(String, String)] = [], headers: [(String, String)] = [],
                 payload: Payload = .none, limit: Int = 1 << 20, patience: TimeAmount? = nil) async throws(RemoteError) -> Response {
        try await transport.retrying { () throws(RemoteError) -> Response in
            // Sending a body takes time on a slow link: allow a second per 64 KiB on top of the timeout.
            let deadline = max(transport.timeout, patience ?? .zero) + .seconds(Int64(payload.count >> 16))
            let client = patience.map { transport.client(patience: $0) } ?? transport.client
            do {
                let response = try await client.execute(makeRequest(method, path: path, query: query, headers: headers, payload: payload),
                                                        timeout: deadline)
                let body = method == .HEAD ? ByteBuffer() : try await response.body.collect(upTo: limit)
                let collected = Response(status: response.status, headers: response.headers, body: Data(body.readableBytesView))
                if Self.isTransient(collected) { throw failure(collected, "\(method.rawValue) \(path)") }
                return collected
            } catch let error as RemoteError {
                throw error
            } catch let error as FileSlice.ReadError {
                throw RemoteError(.io, error.message)
            } catch {
                throw RemoteError(.unreachable, "\(url) cannot be reached (\(method.rawValue) \(path)): \(transport.describe(error))")
            }
        }
    }

    /// 5xx answers and S3's RequestTimeout (a 400 for a body that came too slowly) are worth retrying.
    static func isTransient(_ response: Response) -> Bool {
        response.status.code >= 500
            || (response.status == .badRequest && S3XML.parse(response.body)?.text("Code") == "RequestTimeout")
    }

    // MARK: - Errors

    /// The error for an answer that is not the success expected, from its status and S3 error document
    /// (`<Error><Code>…</Code><Message>…</Message></Error>`, absent for HEAD). `what` names the operation.
    func failure(_ response: Response, _ what: String) -> RemoteError {
        let document = S3XML.parse(response.body)
        let code = document?.text("Code") ?? response.headers.first(name: "x-amz-error-code") ?? ""
        let detail = (document?.text("Message")).map { ": " + $0.split(whereSeparator: \.isNewline).joined(separator: " ") } ?? ""
        let status = response.status.code
        switch code {
        case "NoSuchBucket":
            return noSuchBucket()
        case "SignatureDoesNotMatch":
            return RemoteError(.invalidURL, "\(url): the server says the signature does not match (check AWS_SECRET_ACCESS_KEY)")
        case "InvalidAccessKeyId":
            return RemoteError(.invalidURL, "\(url): the server does not know the access key ID (check AWS_ACCESS_KEY_ID)")
        case "ExpiredToken", "InvalidToken", "TokenRefreshRequired":
            return RemoteError(.invalidURL, "\(url): the session token was refused (\(code); check AWS_SESSION_TOKEN)")
        case "RequestTimeTooSkewed":
            return RemoteError(.invalidURL, "\(url): this machine's clock is too far from the server's to sign requests")
        case "PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException":
            let actual = response.headers.first(name: "x-amz-bucket-region") ?? document?.text("Region")
            let hint = actual.map { "the bucket '\(bucket)' is in region \($0), not \(region): add region=\($0) to the URL" }
            return RemoteError(.invalidURL, "\(url): " + (hint ?? "wrong region or endpoint for the bucket '\(bucket)' (\(code))"))
        default:
            break
        }
        switch status {
        case 301, 307:
            let actual = response.headers.first(name: "x-amz-bucket-region")
            return RemoteError(.invalidURL, "\(url): the bucket '\(bucket)' is in another region" + (actual.map { " (\($0)): add region=\($0) to the URL" } ?? ""))
        case 403:
            return RemoteError(.invalidURL, "\(url): access denied (\(what)); check the credentials and the bucket's policy")
        case 404:
            return RemoteError(.notFound, "\(what): not in \(url)")
        case 412:
            return RemoteError(.changed, "\(what): the object changed in \(url)")
        case 500...:
            return RemoteError(.unreachable, "\(url) answered \(status)\(code.isEmpty ? "" : " " + code) to \(what)")
        default:
            if code == "RequestTimeout" { return RemoteError(.unreachable, "\(url) timed out receiving \(what)") }
            return RemoteError(.invalidResponse, "\(url) answered \(status)\(code.isEmpty ? "" : " " + code) to \(what)\(detail)")
        }
    }

    func noSuchBucket() -> RemoteError {
        RemoteError(.invalidURL, "the bucket '\(bucket)' does not exist at \(scheme)://\(host) (\(url))")
    }

    /// Explains an answer without a body (HEAD): a listing request of one key gets an error document that
    /// says what is wrong (no such bucket, a refused signature); if the listing works, the original answer
    /// is explained by its status alone.
    func diagnose(_ response: Response, _ what: String) async -> RemoteError {
        do {
            let probe = try await perform(.GET, path: rootPath, query: [("list-type", "2"), ("max-keys", "1")])
            if probe.status != .ok { return failure(probe, what) }
        } catch {
            return error
        }
        return failure(response, what)
    }
}
