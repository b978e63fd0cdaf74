import Foundation
import NIOCore

/// Turns a remote URL into a remote: `file:///absolute/path`, `http(s)://host[:port]/prefix` (read-only) and
/// `s3://BUCKET/PREFIX?endpoint=http://HOST:PORT&region=REGION`, whose credentials come from
/// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` in `environment`. `stallTimeout`:
/// how long an http or s3 request may go without a byte before the remote counts as unreachable (nil: the
/// remote's default, 30 s for http and 60 s for s3); a request that stalls is not asked again.
public enum RemoteURL {
    public static func remote(_ text: String, environment: [String: String] = ProcessInfo.processInfo.environment,
                              stallTimeout: Duration? = nil) throws(RemoteError) -> any Remote {
        let timeout = stallTimeout.map { TimeAmount.nanoseconds(max(1, $0.components.seconds * 1_000_000_000 + $0.components.attoseconds / 1_000_000_000)) }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else {
            throw RemoteError(.invalidURL, "invalid remote URL '\(text)'")
        }
        switch scheme {
        case "file":
            let path = url.path
            guard path.hasPrefix("/"), url.host == nil || url.host == "" || url.host == "localhost" else {
                throw RemoteError(.invalidURL, "a file remote needs an absolute path: file:///path/to/folder")
            }
            var shared = false
            for item in URLComponents(string: text)?.queryItems ?? [] {
                guard item.name == "shared", let value = item.value, ["0", "1"].contains(value) else {
                    throw RemoteError(.invalidURL, "a file remote takes one option, shared=1 (objects readable by everyone, for a folder a web server serves): '\(text)'")
                }
                shared = value == "1"
            }
            return FileRemote(root: URL(fileURLWithPath: path).standardizedFileURL.path, shared: shared)
        case "http", "https":
            guard let host = url.host, !host.isEmpty else { throw RemoteError(.invalidURL, "an http remote needs a host: http://host[:port]/prefix") }
            return timeout.map { HTTPRemote(url: text, timeout: $0) } ?? HTTPRemote(url: text)
        case "s3":
            return try s3(text, url: url, environment: environment, timeout: timeout)
        default:
            throw RemoteError(.invalidURL, "unknown remote scheme '\(scheme)' in '\(text)' (use file:///path, http://host/prefix or s3://bucket/prefix)")
        }
    }

    /// `s3://BUCKET/PREFIX` with the optional query parameters `endpoint` and `region`.
    private static func s3(_ text: String, url: URL, environment: [String: String], timeout: TimeAmount?) throws(RemoteError) -> S3Remote {
        let form = "s3://BUCKET/PREFIX?endpoint=http://HOST:PORT&region=REGION"
        guard let bucket = url.host, !bucket.isEmpty else {
            throw RemoteError(.invalidURL, "an s3 remote needs a bucket: \(form)")
        }
        var endpoint: String?
        var region = "us-east-1"
        for item in URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? [] {
            guard let value = item.value, !value.isEmpty else {
                throw RemoteError(.invalidURL, "the s3 remote option '\(item.name)' needs a value: \(form)")
            }
            switch item.name {
            case "endpoint": endpoint = value
            case "region": region = value
            default: throw RemoteError(.invalidURL, "unknown s3 remote option '\(item.name)' (use endpoint and region): \(form)")
            }
        }
        guard url.user == nil, url.password == nil, url.port == nil else {
            throw RemoteError(.invalidURL, "an s3 remote takes no user, password or port (credentials come from the environment): \(form)")
        }
        let remote = { (credentials: S3Credentials) throws(RemoteError) -> S3Remote in
            try S3Remote(bucket: bucket, prefix: url.path, region: region, endpoint: endpoint, credentials: credentials, timeout: timeout ?? .seconds(60))
        }
        guard let credentials = S3Credentials.fromEnvironment(environment) else {
            // Check the rest of the URL first, so a bad URL is reported as such.
            _ = try remote(S3Credentials(accessKeyID: "-", secretAccessKey: "-"))
            throw RemoteError(.invalidURL, "\(text) needs credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
        }
        return try remote(credentials)
    }
}
