import DarkDiskCloud
import DarkDiskTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real distributed object store for the S3 tests beside moto: Ceph's RADOS Gateway
/// from Debian's packages, as a one-node cluster (monitor, in-memory OSD, radosgw) on 127.0.0.1, started by
/// `Tests/Tools/ceph-rgw.sh` for a test and stopped by PID when released. About a second to start.
final class CephServer {
    static let credentials = S3Credentials(accessKeyID: "darkdisk", secretAccessKey: "darkdisk")
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tools/ceph-rgw.sh").path

    let directory: String
    let port: Int
    private var pids: [pid_t] = []

    var endpoint: String { "http://127.0.0.1:\(port)" }

    /// One cluster starts at a time: several starting at once on two cores missed a minute's deadline.
    private static let starting = NSLock()

    init() throws {
        Self.starting.lock()
        defer { Self.starting.unlock() }
        directory = NSTemporaryDirectory() + "darkdisk-ceph-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        port = try Nginx.freePort()
        let monitorPort = try Nginx.freePort()
        let output = directory + "/start.log"
        let pid = try ChildProcess.spawn("/bin/bash", [Self.script, directory + "/cluster", String(monitorPort), String(port)],
                                         stdout: output, stderr: output)
        let status = ChildProcess.wait(pid, seconds: 240)
        pids = ((try? String(contentsOfFile: directory + "/cluster/pids", encoding: .utf8)) ?? "")
            .split(separator: "\n").compactMap { pid_t($0) }
        guard status == 0 else {
            if status == nil { kill(pid, SIGKILL); _ = ChildProcess.wait(pid) }
            let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            stop()
            throw MotoServer.Failed(message: "the Ceph cluster did not start (\(status.map { "exit \($0)" } ?? "no answer in 240 s")): \(log.suffix(800))")
        }
    }

    deinit { stop() }

    private func stop() {
        // Memory-only and thrown away: nothing is worth a clean shutdown.
        for pid in pids { kill(pid, SIGKILL) }
        for pid in pids { _ = ChildProcess.wait(pid, seconds: 10) }
        pids = []
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A remote on this server, its bucket created first.
    func remote(bucket: String = "darkdisk", prefix: String = "") async throws -> S3Remote {
        let remote = try S3Remote(bucket: bucket, prefix: prefix, endpoint: endpoint, credentials: Self.credentials)
        try await remote.createBucket()
        return remote
    }
}
