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
    /// The binary under test (`DarkDiskBinary`).
    static let darkdisk = DarkDiskBinary.path

    /// Runs `executable` with `arguments`, feeding `stdin`, capturing both outputs through files (no pipe deadlocks).
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:]) throws -> Run {
        let files = try RunFiles(stdin: stdin)
        defer { files.remove() }
        let pid = try files.spawn(executable, arguments, environment: environment)
        return try files.result(status: wait(pid))
    }

    /// `run`, waiting for the program without holding a thread (what async tests call).
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:]) async throws -> Run {
        let files = try RunFiles(stdin: stdin)
        defer { files.remove() }
        let pid = try files.spawn(executable, arguments, environment: environment)
        return try files.result(status: await ChildProcess.exitStatus(pid))
    }

    /// The scratch files of one `run`: its input, its two outputs.
    private struct RunFiles {
        let scratch = NSTemporaryDirectory() + "darkdisk-run-" + UUID().uuidString
        var outPath: String { scratch + "/out" }
        var errPath: String { scratch + "/err" }
        var inPath: String { scratch + "/in" }

        init(stdin: Data?) throws {
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: inPath, contents: stdin ?? Data())
        }

        /// Starts the program with this process' environment, less the store's variables, plus `environment`.
        func spawn(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> pid_t {
            var env = ProcessInfo.processInfo.environment
            env.removeValue(forKey: "DARKDISK_STORE")
            env.removeValue(forKey: "DARKDISK_PASSPHRASE_FILE")
            for (k, v) in environment { env[k] = v }
            return try Shell.spawn(executable, arguments, environment: env, stdin: inPath, stdout: outPath, stderr: errPath)
        }

        func result(status: Int32) throws -> Run {
            Run(status: status, stdout: try Data(contentsOf: URL(fileURLWithPath: outPath)),
                stderr: String(decoding: try Data(contentsOf: URL(fileURLWithPath: errPath)), as: UTF8.self))
        }

        func remove() { try? FileManager.default.removeItem(atPath: scratch) }
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
