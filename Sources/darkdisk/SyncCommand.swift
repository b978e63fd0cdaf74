import ArgumentParser
import DarkDiskStore
import DarkDiskCloud
import Foundation
#if canImport(Glibc)
import Glibc
#endif

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Upload every change in the store's upload queue now, in the foreground.",
        discussion: """
            The queue holds what 'push' (with or without --no-wait) and a mount's writes put there; a mount's \
            daemon drains it in the background too. Changes another running process is uploading are left \
            to it, unless --wait, which waits for them as well. A change that meets a newer remote version \
            becomes a conflict copy (one line each on stderr; 'darkdisk status' lists them). Exits 1 if an \
            upload failed (it stays queued and is tried again), 3 if there were conflicts and none failed.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Flag(help: "Also wait for the changes other processes (a mount's daemon) are uploading.")
    var wait = false

    func run() async throws {
        let manager = try storeOptions.open()
        let sync = CloudSync(manager: manager, remote: try StoreRemote.remote(for: manager))
        let bar = isatty(STDERR_FILENO) == 1 ? ProgressBar() : nil
        let result = try await sync.drainQueue(waitForOthers: wait, progress: { done, total in bar?.show(done: done, of: total, "changes") })
        bar?.finish()
        for conflict in result.conflicts {
            FileHandle.standardError.write(Data("darkdisk: node '\(conflict.originalID)' changed in the remote; this store's change was uploaded as node '\(conflict.nodeID)' named '\(conflict.name)'\n".utf8))
        }
        for failure in result.failed {
            FileHandle.standardError.write(Data("darkdisk: node '\(failure.nodeID)': \(failure.error)\n".utf8))
        }
        var summary = "uploaded \(result.uploaded.count) changes"
        if !result.conflicts.isEmpty { summary += ", \(result.conflicts.count) as conflict copies" }
        if !result.failed.isEmpty { summary += ", \(result.failed.count) failed (still queued)" }
        if !result.busy.isEmpty { summary += ", \(result.busy.count) left to another process ('sync --wait' waits for them)" }
        print(summary)
        if !result.failed.isEmpty { throw ExitCode(1) }
        if !result.conflicts.isEmpty { throw ExitCode(3) }
    }
}
