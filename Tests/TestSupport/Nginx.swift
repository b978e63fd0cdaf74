import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real nginx (Debian's) serving a folder on 127.0.0.1 with Range, ETag and a JSON directory index,
/// started for a test and stopped when released. Its access log counts what crossed the wire.
public final class Nginx {
    public let port: Int
    public let prefix: String
    private let pid: pid_t

    public var url: String { "http://127.0.0.1:\(port)" }
    public var accessLog: String { (try? String(contentsOfFile: prefix + "/access.log", encoding: .utf8)) ?? "" }

    public init(root: String) throws {
        prefix = NSTemporaryDirectory() + "darkdisk-nginx-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: prefix, withIntermediateDirectories: true)
        port = try Nginx.freePort()
        let user = getuid() == 0 ? "user root;" : ""
        let config = """
            \(user)
            worker_processes 1;
            daemon off;
            error_log \(prefix)/error.log;
            pid \(prefix)/nginx.pid;
            events { worker_connections 256; }
            http {
              access_log \(prefix)/access.log;
              client_body_temp_path \(prefix)/body; proxy_temp_path \(prefix)/proxy;
              fastcgi_temp_path \(prefix)/fastcgi; uwsgi_temp_path \(prefix)/uwsgi; scgi_temp_path \(prefix)/scgi;
              server {
                listen 127.0.0.1:\(port);
                root \(root);
                autoindex on;
                autoindex_format json;
              }
            }
            """
        try config.write(toFile: prefix + "/nginx.conf", atomically: true, encoding: .utf8)
        let child: pid_t
        do {
            child = try ChildProcess.spawn("/usr/sbin/nginx", ["-p", prefix, "-c", prefix + "/nginx.conf"],
                                           stdout: prefix + "/stdout", stderr: prefix + "/stderr")
        } catch {
            throw NginxFailed(message: "\(error) (install nginx-light)")
        }
        pid = child
        // Generous: it ends once the server listens, and in-process suites start many servers at once.
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if Nginx.canConnect(port) { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        kill(pid, SIGKILL)
        throw NginxFailed(message: "nginx did not start: \((try? String(contentsOfFile: prefix + "/error.log", encoding: .utf8)) ?? "")")
    }

    deinit {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        try? FileManager.default.removeItem(atPath: prefix)
    }

    /// GET requests for `path` in the access log.
    public func requests(for path: String) -> Int {
        accessLog.split(separator: "\n").filter { $0.contains("\"GET /\(path) ") }.count
    }

    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw NginxFailed(message: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    public static func canConnect(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    public struct NginxFailed: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }
}
