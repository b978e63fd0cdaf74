import DarkDiskStore
import DarkDiskSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Backgrounds the mount without `fork()` (unsafe in a threaded Swift process): the command starts
/// itself again with `--foreground --ready-fd N`, its output going to the store's log, and waits until the
/// child reports "mounted" or an error through the pipe. The child leaves the caller's session only once
/// the kernel mount exists (`detach()`), as libfuse's `fuse_daemonize` does after `fuse_mount`: an
/// automounter (autofs, systemd) lets only its own process group look at a mount point while it mounts
/// there, and holds every other process's `stat` of it until the mount is done.
enum DaemonLauncher {
    static func launch(location: StoreLocation) throws {
        var pipeFds: [Int32] = [0, 0]
        guard pipe(&pipeFds) == 0 else { throw CLIError("cannot create a pipe: \(String(cString: strerror(errno)))") }
        let (readEnd, writeEnd) = (OwnedDescriptor(owning: pipeFds[0]), OwnedDescriptor(owning: pipeFds[1]))
        _ = fcntl(readEnd.rawValue, F_SETFD, FD_CLOEXEC)

        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        // The pipe is the daemon's descriptor 3, and the only one it gets besides its standard streams: a
        // daemon holds nothing its caller had open (a script's pipe would wait for it forever; daemon(7)).
        let arguments = [executable] + CommandLine.arguments.dropFirst() + ["--foreground", "--ready-fd", "3"]

        // The log is opened here, so that a store folder that cannot take it is said with its path.
        // (A failure closes the pipe's ends, as their owners go.)
        let log: OwnedDescriptor
        do { log = try OwnedDescriptor.open(location.logPath, O_WRONLY | O_CREAT | O_APPEND, mode: 0o600) } catch {
            throw CLIError("cannot open the mount daemon's log \(location.logPath): \(error)")
        }
        defer { try? log.close() }  // (open until the spawn has made its copies)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, log.rawValue, 1)
        posix_spawn_file_actions_adddup2(&actions, log.rawValue, 2)
        posix_spawn_file_actions_adddup2(&actions, writeEnd.rawValue, 3)
        SpawnClosingFrom.add(to: &actions, from: 4)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))

        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for arg in argv { free(arg) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        try? writeEnd.close()  // (the daemon's copy is the only one left: its exit ends the read below)
        guard rc == 0 else {
            throw CLIError("cannot start the mount daemon \(executable): \(String(cString: strerror(rc)))")
        }
        // One line ("ok" or "error: …"), or end of file if the daemon died. Stop at the line: a process the
        // daemon started may still hold the pipe (it is marked close-on-exec there, but be sure).
        var message = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !message.contains(UInt8(ascii: "\n")) {
            guard let n = try? SystemCall.readSome(readEnd.rawValue, into: &buffer, count: buffer.count), n > 0 else { break }
            message.append(contentsOf: buffer[0..<n])
        }
        try? readEnd.close()
        let text = String(decoding: message, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text == "ok" { return }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        if text.hasPrefix("error: ") { throw CLIError(String(text.dropFirst(7))) }
        throw CLIError("the mount daemon exited before mounting; see \(location.logPath)")
    }

    /// Keeps the daemon's end of the pipe out of the processes it starts: libfuse runs `fusermount3`, which
    /// stays alive for `-o auto_unmount` and would otherwise hold the pipe open for as long as the mount.
    static func keepReadyFdPrivate(_ fd: Int32) {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    /// Called by the daemon once it is mounted, before it tells its parent: a session of its own, so the
    /// terminal's hangup and Ctrl-C no longer reach it.
    static func detach() {
        _ = setsid()
    }

    static func signalReady(fd: Int32) {
        report("ok\n", fd: fd)
    }

    static func signalFailure(fd: Int32, message: String) {
        report("error: \(message)\n", fd: fd)
    }

    private static func report(_ text: String, fd: Int32) {
        let bytes = Array(text.utf8)
        try? SystemCall.write(fd, from: bytes, count: bytes.count)
        try? SystemCall.close(fd)
    }
}
