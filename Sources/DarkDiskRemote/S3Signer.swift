
import DarkDiskCrypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// AWS Signature Version 4 in the Authorization header, as S3 (and MinIO, Ceph RGW, moto) check it: a
/// canonical request (method, RFC 3986-encoded path and sorted query, the signed headers, the payload's
/// SHA-256), hashed into a string to sign, signed with a key derived from the secret, the day, the region
/// and the service.
public struct S3Signer: Sendable {
    public let credentials: S3Credentials
    public let region: String
    public let service: String

    /// The SHA-256 of no bytes, the payload hash of GET, HEAD and DELETE.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    public init(credentials: S3Credentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// The headers to add to a request so the server accepts it: `x-amz-date`, `x-amz-content-sha256`,
    /// `x-amz-security-token` (with temporary credentials) and `Authorization`. `host` is the Host header
    /// the client sends (with the port unless it is the scheme's default), `path` the unencoded path,
    /// `query` the unencoded query parameters, `headers` the other headers sent, all of which are signed.
    public func sign(method: String, host: String, path: String, query: [(String, String)], headers: [(String, String)],
                     payloadHash: String, date: Date) -> [(String, String)] {
        let stamp = Self.timestamp(date)
        let day = String(stamp.prefix(8))
        var added = [("x-amz-date", stamp), ("x-amz-content-sha256", payloadHash)]
        if let token = credentials.sessionToken { added.append(("x-amz-security-token", token)) }

        // Canonical headers: lower-case names, trimmed values with inner runs of spaces folded, sorted by name;
        // a header given twice is one line with its values joined by commas.
        var merged: [String: [String]] = [:]
        for (name, value) in [("host", host)] + headers + added {
            let folded = value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            merged[name.lowercased(), default: []].append(folded)
        }
        let names = merged.keys.sorted()
        let canonicalHeaders = names.map { "\($0):\(merged[$0]!.joined(separator: ","))\n" }.joined()
        let signedHeaders = names.joined(separator: ";")
        let canonicalRequest = [method, Self.encodePath(path), Self.canonicalQuery(query), canonicalHeaders, signedHeaders,
                                payloadHash].joined(separator: "\n")

        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = ["AWS4-HMAC-SHA256", stamp, scope, Hex.encode(Digest.sha256(Array(canonicalRequest.utf8)))]
            .joined(separator: "\n")
        var key = Digest.hmacSHA256(key: Array("AWS4\(credentials.secretAccessKey)".utf8), Array(day.utf8))
        for part in [region, service, "aws4_request"] { key = Digest.hmacSHA256(key: key, Array(part.utf8)) }
        let signature = Hex.encode(Digest.hmacSHA256(key: key, Array(stringToSign.utf8)))
        let authorization = "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope),"
            + "SignedHeaders=\(signedHeaders),Signature=\(signature)"
        return added + [("Authorization", authorization)]
    }

    /// `path` with every byte outside RFC 3986's unreserved set percent-encoded, slashes kept: the canonical
    /// URI, and what goes on the wire so both agree.
    public static func encodePath(_ path: String) -> String {
        percentEncode(path, keepingSlash: true)
    }

    /// The query as S3 canonicalises it: names and values percent-encoded (RFC 3986), sorted by name then
    /// value, `name=value` joined by `&`; a parameter without a value is `name=`.
    public static func canonicalQuery(_ query: [(String, String)]) -> String {
        query.map { (percentEncode($0.0, keepingSlash: false), percentEncode($0.1, keepingSlash: false)) }
            .sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// `yyyyMMdd'T'HHmmss'Z'` in UTC, the `x-amz-date` format.
    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
    }

    private static func percentEncode(_ text: String, keepingSlash: Bool) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            case UInt8(ascii: "/") where keepingSlash:
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
