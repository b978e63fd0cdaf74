import ArgumentParser
import DarkDisk
import DarkDiskCloud

struct PullCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pull",
        abstract: "Fetch the outline from the remote: new nodes appear (no data is downloaded), changed nodes drop their stale local copies, deleted nodes are deleted locally.")

    @OptionGroup var storeOptions: StoreOptions

    func run() async throws {
        let manager = try storeOptions.open(create: true)
        let result = try await CloudSync(manager: manager, remote: try StoreRemote.remote(for: manager)).pull()
        print("pulled: \(result.added) new, \(result.changed) changed, \(result.deleted) deleted, \(result.unchanged) unchanged")
    }
}
