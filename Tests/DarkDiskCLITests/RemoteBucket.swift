import DarkDiskTestSupport
import DarkDiskCrypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Two machines sharing a bucket, as a user sets them up: store A pushes nodes into a
/// `file://` bucket; a real server started by the test (nginx, or our fault proxy in front of nginx) serves
/// the bucket on 127.0.0.1; store B joins it over http with the same passphrase and pulls the outline, so
/// every node is remote-only in B until something reads it.
final class RemoteBucket {
    let a: CLIStore
    let b: CLIStore
    let bucket: String
    let passphrase: String

    init() throws {
        a = try CLIStore()
        b = try CLIStore()
        bucket = a.directory + "/bucket"
        try FileManager.default.createDirectory(atPath: bucket, withIntermediateDirectories: true)
        passphrase = try a.file("pass", Data("mount tests\n".utf8))
        try Self.check(try a.darkdisk(["init", "--remote", "file://" + bucket, "--passphrase-file", passphrase, "--scrypt-log-n", "10"]), "init A")
    }

    /// Pushes one node from A: its data, and a thumbnail and metadata when given; with a `name`, a drive file
    /// of that name at the top of `/files`.
    func push(_ id: String, _ data: Data, thumbnail: Data? = nil, metadata: Data? = nil, name: String? = nil) throws {
        var arguments = ["push", try a.file("push-" + id, data), "--node", id, "--passphrase-file", passphrase]
        if let name { arguments += ["--name", name] }
        if let thumbnail { arguments += ["--thumbnail", try a.file("push-\(id).thumbnail", thumbnail)] }
        if let metadata { arguments += ["--metadata", try a.file("push-\(id).metadata", metadata)] }
        try Self.check(try a.darkdisk(arguments), "push \(id)")
        try? FileManager.default.removeItem(atPath: a.directory + "/push-" + id)
    }

    /// Pushes many nodes, `jobs` processes at a time (each push unwraps the key with scrypt first).
    func push(many nodes: [(id: String, data: Data)], jobs: Int = 4) throws {
        let folder = a.directory + "/push-many"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for node in nodes { try node.data.write(to: URL(fileURLWithPath: folder + "/" + node.id)) }
        let list = try a.file("push-many.list", Data(nodes.map { $0.id + "\n" }.joined().utf8))
        let command = "xargs -P \(jobs) -I{} \(Shell.quote(Shell.darkdisk)) push \(Shell.quote(folder))/{} --node {}"
            + " --store \(Shell.quote(a.storePath)) --passphrase-file \(Shell.quote(passphrase)) < \(Shell.quote(list))"
        try Self.check(try Shell.sh(command), "push of \(nodes.count) nodes")
    }

    /// B joins the bucket served at `url` and pulls the outline (no data).
    func join(_ url: String) throws {
        try Self.check(try b.darkdisk(["init", "--remote", url, "--passphrase-file", passphrase, "--scrypt-log-n", "10"]), "init B")
        try Self.check(try darkdiskB(["pull"]), "pull")
    }

    /// `darkdisk ARGS` on store B (with the passphrase).
    @discardableResult
    func darkdiskB(_ arguments: [String]) throws -> Run {
        try b.darkdisk(arguments + ["--passphrase-file", passphrase])
    }

    /// Mounts store B at `B/mnt`.
    func mountB(_ options: [String] = []) throws -> Mount {
        try Mount(b, options: ["--passphrase-file", passphrase] + options)
    }

    /// The length of a node's cloud file in the bucket, without its padding (what a full download moves).
    func cloudSize(_ id: String) throws -> Int {
        try CloudFileLength.ofObject(at: cloudPath(id))
    }

    /// The name of node `id`'s objects in the bucket (keyed by the master key; asked of store A).
    func objectName(_ id: String) throws -> String { try a.objectName(id, passphrase: passphrase) }

    /// The path of node `id`'s record in the bucket folder.
    func recordPath(_ id: String) throws -> String { bucket + "/records/" + (try objectName(id)) + ".rec" }

    /// The folder of node `id`'s cloud file versions in the bucket folder.
    func cloudFolder(_ id: String) throws -> String { bucket + "/nodes/" + (try objectName(id)) }

    /// The newest version of node `id`'s cloud file, as a server path (`/nodes/<name>/<version>.ddc`).
    func cloudObject(_ id: String) throws -> String { try Self.cloudObject(in: bucket, named: try objectName(id)) }

    /// That version's file in the bucket folder.
    func cloudPath(_ id: String) throws -> String { bucket + (try cloudObject(id)) }

    /// The newest version in a bucket folder of the cloud file of the node whose objects are named `name`
    /// (pushes write a new one each time).
    static func cloudObject(in bucket: String, named name: String) throws -> String {
        let folder = bucket + "/nodes/" + name
        let versions = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".ddc") }
        let newest = try versions.max { a, b in
            let ta = try FileManager.default.attributesOfItem(atPath: folder + "/" + a)[.modificationDate] as? Date ?? .distantPast
            let tb = try FileManager.default.attributesOfItem(atPath: folder + "/" + b)[.modificationDate] as? Date ?? .distantPast
            return ta < tb
        }
        guard let newest else { throw SetupFailed(message: "no cloud file named \(name) in \(bucket)") }
        return "/nodes/\(name)/\(newest)"
    }

    /// One pool of B's `darkdisk status --json` (`files`, `size`, `persistentSize`, `cachedSize`, `maxSize`...).
    func poolB(_ name: String = "data") throws -> [String: Any] {
        let run = try darkdiskB(["status", "--json"])
        guard run.status == 0, let json = try JSONSerialization.jsonObject(with: run.stdout) as? [String: Any],
              let pools = json["pools"] as? [[String: Any]], let pool = pools.first(where: { $0["name"] as? String == name }) else {
            throw SetupFailed(message: "status --json of B: \(run.stderr) \(run.output)")
        }
        return pool
    }

    static func check(_ run: Run, _ what: String) throws {
        guard run.status == 0 else { throw SetupFailed(message: "\(what) failed (\(run.status)): \(run.stderr)") }
    }

    struct SetupFailed: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }
}

/// Random bytes from the kernel (incompressible, fast to make in large amounts).
func randomBytes(_ count: Int) throws -> Data {
    guard let handle = FileHandle(forReadingAtPath: "/dev/urandom") else { throw RemoteBucket.SetupFailed(message: "no /dev/urandom") }
    defer { try? handle.close() }
    var data = Data()
    while data.count < count {
        guard let chunk = try handle.read(upToCount: min(count - data.count, 16 << 20)), !chunk.isEmpty else { break }
        data.append(chunk)
    }
    return data
}

/// Lowercase hex SHA-256, as `sha256sum` prints it.
func sha256Hex(_ data: Data) -> String {
    Digest.sha256(data).map { String(format: "%02x", $0) }.joined()
}

/// The mount daemon of a mount point, found in /proc: the `darkdisk mount MOUNTPOINT ... --foreground`
/// process that `darkdisk mount` started.
enum MountDaemon {
    static func pid(serving mountpoint: String) -> pid_t? {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
        for entry in entries {
            guard let pid = pid_t(entry), isAlive(pid),
                  let raw = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
            let arguments = raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if arguments.count > 2, arguments[0].hasSuffix("darkdisk"), arguments.contains("mount"),
               arguments.contains(mountpoint), arguments.contains("--foreground") {
                return pid
            }
        }
        return nil
    }

    /// True while the process exists and is not a zombie.
    static func isAlive(_ pid: pid_t) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return false }
        let state = status.split(separator: "\n").first { $0.hasPrefix("State:") } ?? ""
        return !state.contains("Z (zombie)") && !state.contains("X (dead)")
    }
}

/// A test's `sh -c` script run in the background (its own process group), with its output in files.
final class Background {
    let pid: pid_t
    let out: String
    let err: String
    private var status: Int32?

    init(_ script: String, in directory: String) throws {
        let name = UUID().uuidString
        out = directory + "/bg-\(name).out"
        err = directory + "/bg-\(name).err"
        pid = try Shell.spawn("/bin/bash", ["-c", script], stdout: out, stderr: err, newProcessGroup: true)
    }

    /// Waits at most `seconds` for the script, suspending (not blocking a thread) between looks; nil if it
    /// was still running (it is then killed).
    func wait(seconds: Double) async -> Int32? {
        if let status { return status }
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if reap() { return status }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        if reap() { return status }
        killNow()
        return nil
    }

    /// Whether the script has exited (its status is then kept).
    private func reap() -> Bool {
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return false }
        status = raw & 0x7F == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
        return true
    }

    private func killNow() {
        var raw: Int32 = 0
        kill(-pid, SIGKILL)
        waitpid(pid, &raw, 0)
        status = -1
    }

    var stdout: Data { (try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data() }
    var stderr: String { (try? String(contentsOfFile: err, encoding: .utf8)) ?? "" }

    deinit {
        if status == nil, !reap() { killNow() }
    }
}

extension Shell {
    /// `sh -c COMMAND`, killed after `seconds`: a read that hangs in a mount must not hang the test.
    static func sh(_ command: String, timeout seconds: Int) throws -> Run {
        try run("/usr/bin/timeout", ["-s", "KILL", String(seconds), "/bin/sh", "-c", command])
    }

    /// The value of extended attribute `name` of `path` (`getfattr --only-values`, surrounding white space
    /// removed), or nil when getfattr fails.
    static func xattr(_ name: String, _ path: String) throws -> String? {
        let run = try sh("getfattr --only-values -n \(name) \(quote(path))", timeout: 30)
        return run.status == 0 ? run.output.trimmingCharacters(in: .whitespacesAndNewlines) : nil
    }

    /// `sha256sum` of a file read with `cat` (so through the mount), or the error.
    static func sha256(of path: String, timeout seconds: Int = 120) throws -> String {
        let run = try Shell.run("/usr/bin/timeout", ["-s", "KILL", String(seconds), "/bin/bash", "-c",
                                                     "set -o pipefail; cat \(quote(path)) | sha256sum"])
        guard run.status == 0 else { return "cat failed (\(run.status)): \(run.stderr)" }
        return String(run.output.prefix(64))
    }
}
