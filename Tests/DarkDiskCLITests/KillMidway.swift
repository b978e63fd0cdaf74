import DarkDiskTestSupport
import Foundation

/// Kills of CLI commands in the middle of their work, for the fault runs.
enum KillMidway {
    /// Starts `darkdisk ARGS` and kills it with SIGKILL at `fraction` of `runtime` seconds; 1 if it was
    /// still running then. A command that finished first sets `runtime` to how long it took.
    static func run(_ arguments: [String], at fraction: Double, of runtime: inout Double, in directory: String) async -> Int {
        let started = Date()
        guard let process = try? Background("exec " + ([Shell.darkdisk] + arguments).map(Shell.quote).joined(separator: " ") + " > /dev/null",
                                            in: directory) else { return 0 }
        if await process.wait(seconds: fraction * runtime) != nil {
            runtime = Date().timeIntervalSince(started)
            return 0
        }
        return 1
    }
}
