import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Our fault-injecting HTTP proxy (`Tests/Tools/fault-proxy.py`), started for a test on 127.0.0.1 and
/// stopped when released. It forwards GET and HEAD to an upstream (a real nginx), counts the body bytes it
/// sends per path, and injects faults set at run time with `control(_:)`: a connection cut mid-body, 5xx
/// bursts, a throttle, a stall, a 200 to a range request, the object replaced between parts.
public final class FaultProxy: Sendable {
    public let port: Int
    private let pid: pid_t
    private let scratch: String

    public var url: String { "http://127.0.0.1:\(port)" }

    /// A proxy in front of `upstream` (`http://127.0.0.1:PORT`).
    public convenience init(upstream: String) throws {
        try self.init(arguments: ["--upstream", upstream])
    }

    /// A proxy that starts its own nginx serving `root` (stopped with the proxy), on `port` (0: any free
    /// one; a port again: a server that was stopped comes back where its clients look for it).
    public convenience init(servingRoot root: String, port: Int = 0) throws {
        try self.init(arguments: ["--serve-root", root], port: port)
    }

    private init(arguments: [String], port: Int = 0) throws {
        scratch = NSTemporaryDirectory() + "darkdisk-proxy-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        let python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "/usr/local/bin/python3"
        let child: pid_t
        do {
            child = try ChildProcess.spawn(python, [FaultProxy.script] + arguments + ["--port", String(port)],
                                           stdout: scratch + "/stdout", stderr: scratch + "/stderr")
        } catch {
            throw ProxyFailed(message: "\(error)")
        }
        pid = child
        // Generous: it ends once the proxy listens, and in-process suites start many at once.
        let deadline = Date().addingTimeInterval(60)
        var status: Int32 = 0
        while Date() < deadline {
            let out = (try? String(contentsOfFile: scratch + "/stdout", encoding: .utf8)) ?? ""
            if let line = out.split(separator: "\n").first(where: { $0.hasPrefix("listening ") }),
               let port = line.split(separator: ":").last.flatMap({ Int($0) }) {
                self.port = port
                return
            }
            if waitpid(child, &status, WNOHANG) == child { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        kill(child, SIGKILL)
        waitpid(child, &status, 0)
        let stderr = (try? String(contentsOfFile: scratch + "/stderr", encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: scratch)
        throw ProxyFailed(message: "the fault proxy did not start: \(stderr)")
    }

    deinit {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        try? FileManager.default.removeItem(atPath: scratch)
    }

    static let script: String = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tools/fault-proxy.py").path

    // MARK: Faults and counters

    /// Merges fault settings (see the script's header): `["cut": ["after": 100_000, "count": 2]]`,
    /// `["fail": ["status": 503, "count": 4]]`, `["throttle": 8_000_000]`, `["clear": true]`, `["reset_stats": true]`...
    public func control(_ settings: [String: Any]) throws {
        let body = try JSONSerialization.data(withJSONObject: settings)
        _ = try exchange("POST", "/__control", body: body)
    }

    public func stats() throws -> Stats {
        try JSONDecoder().decode(Stats.self, from: exchange("GET", "/__stats", body: Data()))
    }

    /// Body bytes sent for `path` (e.g. `/nodes/n.ddc`) since the counters were reset.
    public func bytes(_ path: String) throws -> Int { try stats().paths[path]?.bytes ?? 0 }

    public struct Stats: Decodable {
        public let bytes: Int
        public let paths: [String: PathStats]
        public let cuts: Int
        public let failures: Int
        public let stalls: Int
        public let ignoredRanges: Int
        public let replacements: Int
        public let pads: Int
        public let requests: [Request]

        enum CodingKeys: String, CodingKey {
            case bytes, paths, cuts, failures, stalls, replacements, pads, requests
            case ignoredRanges = "ignored_ranges"
        }
    }

    public struct PathStats: Decodable {
        public let gets: Int
        public let heads: Int
        public let bytes: Int
    }

    public struct Request: Decodable {
        public let method: String
        public let path: String
        public let range: String?
        public let status: Int
        public let bytes: Int
        public let fault: String?
    }

    /// One HTTP/1.0 exchange with the proxy's control endpoints over a plain socket; returns the body.
    private func exchange(_ method: String, _ path: String, body: Data) throws -> Data {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ProxyFailed(message: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else { throw ProxyFailed(message: "cannot connect to the fault proxy on port \(port)") }
        var request = Data("\(method) \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
        request.append(body)
        try request.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            var done = 0
            while done < buffer.count {
                let n = send(fd, buffer.baseAddress! + done, buffer.count - done, Int32(MSG_NOSIGNAL))
                if n < 0 { if errno == EINTR { continue }; throw ProxyFailed(message: "send: \(String(cString: strerror(errno)))") }
                done += n
            }
        }
        var response = Data()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n < 0 { if errno == EINTR { continue }; throw ProxyFailed(message: "recv: \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            response.append(contentsOf: chunk[0..<n])
        }
        guard let end = response.range(of: Data("\r\n\r\n".utf8)) else { throw ProxyFailed(message: "no answer from the fault proxy") }
        let head = String(decoding: response[..<end.lowerBound], as: UTF8.self)
        let answer = Data(response[end.upperBound...])
        guard head.hasPrefix("HTTP/1.") && head.split(separator: " ").dropFirst().first == "200" else {
            throw ProxyFailed(message: "the fault proxy answered \(head.split(separator: "\r\n").first ?? ""): \(String(decoding: answer, as: UTF8.self))")
        }
        return answer
    }

    public struct ProxyFailed: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }
}
