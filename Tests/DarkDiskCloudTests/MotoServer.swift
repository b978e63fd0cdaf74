import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskSystem
import DarkDiskTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A real S3 API (moto's server, `python3 -m moto.server` from PyPI `moto[server]`) on 127.0.0.1, started
/// for a test and stopped when released. By default moto takes any credentials; `authenticated()` makes it
/// check every request's signature with botocore's own signer and its IAM users, so the remote's Signature V4
/// is judged by AWS' reference code. One moto bug limits that mode: it checks the signature against the
/// query as decoded, so a query value with a reserved character (the `/` of `prefix=records/`) is refused
/// even from boto3 itself; authenticated tests list slash-free prefixes only.
final class MotoServer {
    /// Credentials for a server that is not authenticated: any will do.
    static let anyCredentials = S3Credentials(accessKeyID: "darkdisk", secretAccessKey: "darkdisk")

    let port: Int
    let directory: String
    private let pid: pid_t

    var endpoint: String { "http://127.0.0.1:\(port)" }
    var log: String { (try? String(contentsOfFile: directory + "/moto.log", encoding: .utf8)) ?? "" }

    /// moto's own server (`python3 -m moto.server`), with one change: conditional requests (`If-Match`,
    /// `If-None-Match`) are handled one at a time. moto checks a condition and then stores the object in
    /// two steps on its request threads, so two writers based on one ETag could both land, which AWS S3
    /// (and Ceph RGW) never allow; serialising them gives moto the atomicity the tests rely on.
    static let launcher = """
        import os, sys, threading
        from werkzeug.serving import run_simple
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
        host, port = sys.argv[1], int(sys.argv[2])
        os.environ.setdefault("MOTO_PORT", str(port))
        app = DomainDispatcherApplication(create_backend_app)
        lock = threading.Lock()
        def serve(environ, start_response):
            if "HTTP_IF_MATCH" in environ or "HTTP_IF_NONE_MATCH" in environ:
                with lock:
                    return list(app(environ, start_response))
            return app(environ, start_response)
        run_simple(host, port, serve, threaded=True)
        """

    init() throws {
        directory = NSTemporaryDirectory() + "darkdisk-moto-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Generous: it ends once moto listens, and the `.ownThreads` suites start many at once.
        let log = directory + "/moto.log"
        switch try ServerLaunch.onFreePort(timeout: 120, { port in try Self.start(port: port, log: log) }) {
        case .listening(let port, let pid):
            self.port = port
            self.pid = pid
        case let outcome:
            let said = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(whereSeparator: \.isNewline).suffix(5)
            throw Failed(message: "moto did not start: \(outcome.description); it said: \(said.isEmpty ? "nothing" : said.joined(separator: " | "))")
        }
    }

    /// Starts moto's server on 127.0.0.1:`port`, its output in `log`.
    private static func start(port: Int, log: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        SpawnClosingFrom.add(to: &actions, from: 3)
        let args = ["python3", "-c", Self.launcher, "127.0.0.1", String(port)]
        let argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var child: pid_t = 0
        guard posix_spawnp(&child, args[0], &actions, nil, argv, environ) == 0 else {
            throw Failed(message: "cannot start python3 -m moto.server (Scripts/install-deps installs moto[server])")
        }
        return child
    }

    deinit {
        // moto's SIGTERM handler waits for open keep-alive connections: it holds no state worth a clean exit.
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A remote on this server; the bucket is created first unless `create` is false.
    func remote(bucket: String = "darkdisk", prefix: String = "", credentials: S3Credentials, create: Bool = true,
                partSize: Int = 16 << 20, multipartThreshold: Int? = nil, listPageSize: Int? = nil,
                attempts: Int = 3) async throws -> S3Remote {
        let remote = try S3Remote(bucket: bucket, prefix: prefix, endpoint: endpoint, credentials: credentials,
                                  attempts: attempts, partSize: partSize, multipartThreshold: multipartThreshold,
                                  listPageSize: listPageSize)
        if create { try await remote.createBucket() }
        return remote
    }

    /// Creates an IAM user allowed everything on S3 and an access key for it (moto accepts any request
    /// until then), then turns authentication on: from now on a request with a wrong signature or an
    /// unknown key is refused as AWS would refuse it.
    func authenticated() async throws -> S3Credentials {
        _ = try await iam(["Action": "CreateUser", "UserName": "darkdisk"])
        let key = try await iam(["Action": "CreateAccessKey", "UserName": "darkdisk"])
        let policy = #"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}"#
        _ = try await iam(["Action": "PutUserPolicy", "UserName": "darkdisk", "PolicyName": "s3", "PolicyDocument": policy])
        guard let id = Self.element("AccessKeyId", in: key), let secret = Self.element("SecretAccessKey", in: key) else {
            throw Failed(message: "moto's CreateAccessKey answered no key: \(key)")
        }
        var request = URLRequest(url: URL(string: endpoint + "/moto-api/reset-auth")!)
        request.httpMethod = "POST"
        request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data("0".utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw Failed(message: "moto's reset-auth failed: \(response)") }
        return S3Credentials(accessKeyID: id, secretAccessKey: secret)
    }

    /// How many multipart uploads of `bucket` are in progress (started, neither completed nor aborted), by an
    /// unsigned ListMultipartUploads, which moto answers while it is not authenticated.
    func multipartUploadsInProgress(bucket: String = "darkdisk") async throws -> Int {
        let (data, _) = try await URLSession.shared.data(from: URL(string: "\(endpoint)/\(bucket)?uploads")!)
        let text = String(decoding: data, as: UTF8.self)
        guard text.contains("<ListMultipartUploadsResult") else { throw Failed(message: "ListMultipartUploads answered \(text)") }
        return text.components(separatedBy: "<Upload>").count - 1
    }

    /// One IAM Query API call (a form POST, signed for the service "iam", which is how moto routes it).
    private func iam(_ parameters: [String: String]) async throws -> String {
        let form = S3Signer.canonicalQuery(parameters.map { ($0.key, $0.value) } + [("Version", "2010-05-08")])
        let body = Data(form.utf8)
        let headers = [("Content-Type", "application/x-www-form-urlencoded")]
        let signer = S3Signer(credentials: S3Credentials(accessKeyID: "setup", secretAccessKey: "setup"), region: "us-east-1", service: "iam")
        let host = "127.0.0.1:\(port)"
        var request = URLRequest(url: URL(string: endpoint + "/")!)
        request.httpMethod = "POST"
        for (name, value) in headers + signer.sign(method: "POST", host: host, path: "/", query: [], headers: headers,
                                                   payloadHash: Hex.encode(Digest.sha256(body)), date: Date()) {
            request.addValue(value, forHTTPHeaderField: name)
        }
        request.httpBody = body
        let (data, response) = try await URLSession.shared.data(for: request)
        let text = String(decoding: data, as: UTF8.self)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw Failed(message: "IAM \(parameters["Action"] ?? "") failed: \(text)") }
        return text
    }

    private static func element(_ name: String, in xml: String) -> String? {
        guard let start = xml.range(of: "<\(name)>"), let end = xml.range(of: "</\(name)>", range: start.upperBound..<xml.endIndex) else { return nil }
        return String(xml[start.upperBound..<end.lowerBound])
    }

    struct Failed: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }
}
