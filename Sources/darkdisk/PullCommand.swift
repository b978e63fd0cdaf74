import ArgumentParser
import DarkDisk
import DarkDiskCloud
import Foundation

struct PullCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pull",
        abstract: "Fetch the outline from the remote: new nodes appear (no data is downloaded), changed nodes drop their stale local copies, deleted nodes are deleted locally.",
        discussion: "A record that is malformed or names another node is skipped with one line on stderr (the node keeps what this store had of it), the rest is pulled, and the exit status is 1.")

    @OptionGroup var storeOptions: StoreOptions

    @Flag(help: "Delete every local node if the remote lists none (refused by default: an empty listing is more often a wrong or unmounted bucket than a remote emptied on purpose).")
    var acceptEmptyRemote = false

    func run() async throws {
        let manager = try storeOptions.open()
        let result = try await CloudSync(manager: manager, remote: try StoreRemote.remote(for: manager)).pull(acceptEmptyRemote: acceptEmptyRemote)
        for line in result.skipped { FileHandle.standardError.write(Data("darkdisk: skipped: \(line)\n".utf8)) }
        let skipped = result.skipped.isEmpty ? "" : ", \(result.skipped.count) skipped"
        print("pulled: \(result.added) new, \(result.changed) changed, \(result.deleted) deleted, \(result.unchanged) unchanged\(skipped)")
        // The rest is pulled, but a script must notice (as rsync's exit 23 for a partial transfer).
        if !result.skipped.isEmpty { throw ExitCode(1) }
    }
}
