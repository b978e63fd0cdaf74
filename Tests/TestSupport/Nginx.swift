import DarkDiskSystem
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
        let folder = NSTemporaryDirectory() + "darkdisk-nginx-" + UUID().uuidString
        prefix = folder
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // Generous: it ends once the server listens, and in-process suites start many servers at once.
        switch try ServerLaunch.onFreePort(timeout: 60, { port in try Nginx.start(root: root, port: port, prefix: folder) }) {
        case .listening(let port, let pid):
            self.port = port
            self.pid = pid
        case let outcome:
            let said = ["error.log", "stderr"].compactMap { try? String(contentsOfFile: folder + "/" + $0, encoding: .utf8) }
                .joined(separator: " ").split(whereSeparator: \.isNewline).joined(separator: " | ")
            throw NginxFailed(message: "nginx did not start: \(outcome.description); it said: \(said.isEmpty ? "nothing" : said)")
        }
    }

    /// Starts nginx serving `root` on 127.0.0.1:`port`, its files under `prefix`.
    private static func start(root: String, port: Int, prefix: String) throws -> pid_t {
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
        do {
            return try ChildProcess.spawn("/usr/sbin/nginx", ["-p", prefix, "-c", prefix + "/nginx.conf"],
                                          stdout: prefix + "/stdout", stderr: prefix + "/stderr")
        } catch {
            throw NginxFailed(message: "\(error) (install nginx-light)")
        }
    }

    /// Whether process `pid` holds a socket listening on 127.0.0.1:`port` (`/proc/net/tcp`, and the socket's
    /// inode among the process's descriptors): a connection alone may reach another server that took the port.
    public static func listens(_ pid: pid_t, on port: Int) -> Bool {
        // The process's few sockets first: the table may hold thousands of connections the suite made.
        let sockets = Set(socketLinks(of: pid))
        guard !sockets.isEmpty else { return false }
        return listeners(on: port).contains { sockets.contains("socket:[\($0)]") }
    }

    /// The socket inodes listening on 127.0.0.1:`port`, from `/proc/net/tcp`.
    static func listeners(on port: Int) -> [String] {
        // (Read to its end: `String(contentsOfFile:)` stops after the first page, 27 lines of this table.)
        guard let bytes = try? SystemCall.readWhole("/proc/net/tcp") else { return [] }
        let table = String(decoding: bytes, as: UTF8.self)
        let local = String(format: "0100007F:%04X", port)
        return table.split(separator: "\n").dropFirst().compactMap { line -> String? in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 9, fields[1] == local, fields[3] == "0A" else { return nil }
            return String(fields[9])
        }
    }

    /// The `socket:[inode]` links among process `pid`'s descriptors.
    private static func socketLinks(of pid: pid_t) -> [String] {
        let folder = "/proc/\(pid)/fd"
        guard let descriptors = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return [] }
        return descriptors.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + $0) }
            .filter { $0.hasPrefix("socket:") }
    }

    /// What a server that never listened left behind, for its failure message: who listens on `port`, what the
    /// process holds, whether the port answers.
    static func portReport(_ port: Int, pid: pid_t) -> String {
        let alive = kill(pid, 0) == 0
        return "listeners on the port \(listeners(on: port)), process \(pid) \(alive ? "alive" : "gone") with sockets "
            + "\(socketLinks(of: pid)), the port \(canConnect(port) ? "answers" : "does not answer")"
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
        let port = Int(UInt16(bigEndian: address.sin_port))
        // The kernel may offer a port again once closed; this process's servers must not share one.
        guard ServerLaunch.handedOut.withLock({ $0.insert(port).inserted }) else { return try freePort() }
        return port
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
