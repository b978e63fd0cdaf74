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
        FileManager.default.createFile(atPath: outPath, contents: nil)
        FileManager.default.createFile(atPath: errPath, contents: nil)
        FileManager.default.createFile(atPath: inPath, contents: stdin ?? Data())
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "DARKDISK_STORE")
        env.removeValue(forKey: "DARKDISK_PASSPHRASE_FILE")
        for (k, v) in environment { env[k] = v }
        process.environment = env
        process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: inPath))
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        try process.run()
        process.waitUntilExit()
        return Run(status: process.terminationStatus,
                   stdout: try Data(contentsOf: URL(fileURLWithPath: outPath)),
                   stderr: String(decoding: try Data(contentsOf: URL(fileURLWithPath: errPath)), as: UTF8.self))
    }

    /// Runs a `/bin/sh -c` command line.
    @discardableResult
    static func sh(_ command: String, stdin: Data? = nil) throws -> Run {
        try run("/bin/sh", ["-c", command], stdin: stdin)
    }

    /// Quotes a string for `sh`.
    static func quote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
}
