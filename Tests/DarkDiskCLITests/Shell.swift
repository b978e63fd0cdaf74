import DarkDiskTestSupport
import Foundation

/// The result of a finished command.
struct Run {
    let status: Int32
    let stdout: Data
    let stderr: String

    var output: String { String(decoding: stdout, as: UTF8.self) }
    var stderrLines: [Substring] { stderr.split(separator: "\n", omittingEmptySubsequences: true) }
}

/// Runs real programs: the built `darkdisk` binary and shell tools.
enum Shell {
    /// The binary under test: `DARKDISK_BIN` (set by Scripts/test), else the debug build next to the sources.
    static let darkdisk: String = {
        if let path = ProcessInfo.processInfo.environment["DARKDISK_BIN"], !path.isEmpty { return path }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/darkdisk").path
    }()

    /// Runs `executable` with `arguments`, feeding `stdin`, capturing both outputs through files (no pipe deadlocks).
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:]) throws -> Run {
        let scratch = NSTemporaryDirectory() + "darkdisk-run-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let outPath = scratch + "/out", errPath = scratch + "/err", inPath = scratch + "/in"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        _ = FileManager.default.createFile(atPath: inPath, contents: stdin ?? Data())
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "DARKDISK_STORE")
        env.removeValue(forKey: "DARKDISK_PASSPHRASE_FILE")
        for (k, v) in environment { env[k] = v }
        let pid = try spawn(executable, arguments, environment: env, stdin: inPath, stdout: outPath, stderr: errPath)
        let status = wait(pid)
        return Run(status: status,
                   stdout: try Data(contentsOf: URL(fileURLWithPath: outPath)),
                   stderr: String(decoding: try Data(contentsOf: URL(fileURLWithPath: errPath)), as: UTF8.self))
    }

    /// `run`, waiting for the program without holding a thread (what async tests call).
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:]) async throws -> Run {
        let scratch = NSTemporaryDirectory() + "darkdisk-run-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let outPath = scratch + "/out", errPath = scratch + "/err", inPath = scratch + "/in"
        _ = FileManager.default.createFile(atPath: inPath, contents: stdin ?? Data())
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "DARKDISK_STORE")
        env.removeValue(forKey: "DARKDISK_PASSPHRASE_FILE")
        for (k, v) in environment { env[k] = v }
        let pid = try spawn(executable, arguments, environment: env, stdin: inPath, stdout: outPath, stderr: errPath)
        let status = await ChildProcess.exitStatus(pid)
        return Run(status: status,
                   stdout: try Data(contentsOf: URL(fileURLWithPath: outPath)),
                   stderr: String(decoding: try Data(contentsOf: URL(fileURLWithPath: errPath)), as: UTF8.self))
    }

    /// `sh`, waiting without holding a thread.
    @discardableResult
    static func sh(_ command: String, stdin: Data? = nil) async throws -> Run {
        try await run("/bin/sh", ["-c", command], stdin: stdin)
    }

    static func wait(_ pid: pid_t) async -> Int32 { await ChildProcess.exitStatus(pid) }
    static func wait(_ pid: pid_t, seconds: Double) async -> Int32? { await ChildProcess.exitStatus(pid, seconds: seconds) }

    /// Starts a program (`ChildProcess.spawn`, with this process' environment by default).
    static func spawn(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                      stdin: String = "/dev/null", stdout: String = "/dev/null", stderr: String = "/dev/null",
                      newProcessGroup: Bool = false) throws -> pid_t {
        try ChildProcess.spawn(executable, arguments, environment: environment, stdin: stdin, stdout: stdout, stderr: stderr,
                               newProcessGroup: newProcessGroup)
    }

    static func wait(_ pid: pid_t) -> Int32 { ChildProcess.wait(pid) }
    static func wait(_ pid: pid_t, seconds: Double) -> Int32? { ChildProcess.wait(pid, seconds: seconds) }

    /// Runs a `/bin/sh -c` command line.
    @discardableResult
    static func sh(_ command: String, stdin: Data? = nil) throws -> Run {
        try run("/bin/sh", ["-c", command], stdin: stdin)
    }

    /// Quotes a string for `sh`.
    static func quote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
}
