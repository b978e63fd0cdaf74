import DarkDiskSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Starts and reaps the programs tests run (the CLI, servers, helper tools) with `posix_spawn`: Foundation's
/// `Process` loses child exits when many tests spawn at once.
public enum ChildProcess {
    /// Starts `executable` with its standard streams on files (created or truncated), a clean signal state
    /// (the spawning thread may be a Dispatch worker with every signal blocked) and `environment` (default:
    /// this process'). With `newProcessGroup`, the child leads a group of its own (to signal all it starts).
    public static func spawn(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                             stdin: String = "/dev/null", stdout: String = "/dev/null", stderr: String = "/dev/null",
                             newProcessGroup: Bool = false) throws(SpawnFailed) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        // Nothing else of the test process: not its sockets, nor another test's pipe (whose reader would wait on).
        SpawnClosingFrom.add(to: &actions, from: 3)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for p in argv + (envp ?? []) { free(p) } }
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
        let rc = envp.map { envp in posix_spawn(&pid, executable, &actions, &attributes, argv, envp) }
            ?? posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard rc == 0 else { throw SpawnFailed(executable: executable, code: rc) }
        return pid
    }

    /// Waits for a spawned program and returns its exit status (128 + signal if it was killed).
    public static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return decode(status)
    }

    /// Waits at most `seconds`; a program still running then is killed and nil returned.
    public static func wait(_ pid: pid_t, seconds: Double) -> Int32? {
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

    /// Waits for a spawned program without holding a thread: polls its exit, sleeping between polls (a few
    /// milliseconds at first, at most 50). Returns its exit status (128 + signal if it was killed).
    public static func exitStatus(_ pid: pid_t) async -> Int32 {
        var status: Int32 = 0
        var pause: UInt64 = 2_000_000
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { return decode(status) }
            if reaped < 0 && errno != EINTR { return decode(status) }
            try? await Task.sleep(nanoseconds: pause)
            pause = min(pause * 2, 50_000_000)
        }
    }

    /// As `exitStatus(_:)`, for at most `seconds`; a program still running then is killed and nil returned.
    public static func exitStatus(_ pid: pid_t, seconds: Double) async -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        var status: Int32 = 0
        while Date() < deadline {
            if waitpid(pid, &status, WNOHANG) == pid { return decode(status) }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        kill(pid, SIGKILL)
        return await exitStatus(pid)
    }

    static func decode(_ status: Int32) -> Int32 {
        status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    public struct SpawnFailed: Error, CustomStringConvertible {
        public let executable: String
        public let code: Int32
        public var description: String { "cannot start \(executable): \(String(cString: strerror(code)))" }
    }
}
