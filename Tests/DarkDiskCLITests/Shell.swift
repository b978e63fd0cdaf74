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

    /// Starts a program with posix_spawn (Foundation's Process loses child exits when many tests spawn at once).
    static func spawn(_ executable: String, _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
                      stdin: String = "/dev/null", stdout: String = "/dev/null", stderr: String = "/dev/null",
                      newProcessGroup: Bool = false) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        // A clean signal state: the spawning thread may be a Dispatch worker with every signal blocked.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if newProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            flags |= POSIX_SPAWN_SETPGROUP
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw SpawnFailed(executable: executable, code: rc) }
        return pid
    }

    /// Waits for a spawned program and returns its exit status (128 + signal if it was killed).
    static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return decode(status)
    }

    /// Waits at most `seconds`; a program still running then is killed and nil returned.
    static func wait(_ pid: pid_t, seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        var status: Int32 = 0
        while Date() < deadline {
            if waitpid(pid, &status, WNOHANG) == pid { return decode(status) }
            Thread.sleep(forTimeInterval: 0.05)
        }
        kill(pid, SIGKILL)
        _ = wait(pid)
        return nil
    }

    private static func decode(_ status: Int32) -> Int32 {
        status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    struct SpawnFailed: Error, CustomStringConvertible {
        let executable: String
        let code: Int32
        var description: String { "cannot start \(executable): \(String(cString: strerror(code)))" }
    }

    /// Runs a `/bin/sh -c` command line.
    @discardableResult
    static func sh(_ command: String, stdin: Data? = nil) throws -> Run {
        try run("/bin/sh", ["-c", command], stdin: stdin)
    }

    /// Quotes a string for `sh`.
    static func quote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
}
