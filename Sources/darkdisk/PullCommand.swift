import ArgumentParser
import DarkDisk
import DarkDiskCloud

struct PullCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pull",
        abstract: "Fetch the outline from the remote: new nodes appear (no data is downloaded), changed nodes drop their stale local copies, deleted nodes are deleted locally.")

    @OptionGroup var storeOptions: StoreOptions

    @Flag(help: "Delete every local node if the remote lists none (refused by default: an empty listing is more often a wrong or unmounted bucket than a remote emptied on purpose).")
    var acceptEmptyRemote = false

    func run() async throws {
        let manager = try storeOptions.open()
        let result = try await CloudSync(manager: manager, remote: try StoreRemote.remote(for: manager)).pull(acceptEmptyRemote: acceptEmptyRemote)
        print("pulled: \(result.added) new, \(result.changed) changed, \(result.deleted) deleted, \(result.unchanged) unchanged")
    }
}
