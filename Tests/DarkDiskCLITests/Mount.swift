import DarkDiskFS
import Foundation

/// A real FUSE mount of a CLIStore, made with `darkdisk mount` (backgrounded) and torn down at the end.
final class Mount {
    let store: CLIStore
    let path: String

    /// `descriptorLimit`: the daemon's hard (and so soft) limit of open files, set with `prlimit`.
    init(_ store: CLIStore, options: [String] = [], descriptorLimit: Int? = nil) throws {
        self.store = store
        path = store.directory + "/mnt"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        // Changes upload at once unless a test asks for the write-back delay (its own test covers the default).
        let writeBack = options.contains("--write-back") ? [] : ["--write-back", "0"]
        let arguments = ["mount", path] + options + writeBack
        let run = try descriptorLimit.map { limit in
            try Shell.run("/usr/bin/prlimit", ["--nofile=\(limit):\(limit)", Shell.darkdisk] + arguments + ["--store", store.storePath])
        } ?? store.darkdisk(arguments)
        guard run.status == 0 else { throw MountFailed(message: run.stderr) }
        guard Mount.isMounted(path) else { throw MountFailed(message: "mount returned but \(path) is not mounted") }
    }

    deinit {
        if Mount.isMounted(path) { _ = try? Shell.run("/bin/fusermount3", ["-u", "-z", path]) }
    }

    /// The process ID of the daemon serving this mount (found by its command line), if it runs.
    var daemonPID: pid_t? {
        let procs = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in procs {
            guard let pid = pid_t(entry), let line = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
            let arguments = line.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if arguments.contains("--foreground"), arguments.contains(path), arguments.contains("mount") { return pid }
        }
        return nil
    }

    /// The daemon's log (the store's darkdisk.log).
    var log: String {
        (try? String(contentsOfFile: store.storePath + "/data/darkdisk.log", encoding: .utf8)) ?? ""
    }

    /// Whether something is mounted at `path` (the daemon's own parser of /proc/self/mountinfo, escapes and all).
    static func isMounted(_ path: String) -> Bool {
        MountTable.top(at: path) != nil
    }

    struct MountFailed: Error, CustomStringConvertible {
        let message: String
        var description: String { "mount failed: \(message)" }
    }
}
