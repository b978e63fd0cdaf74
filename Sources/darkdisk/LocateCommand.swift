import ArgumentParser
import DarkDiskStore
import DarkDiskCloud
import Foundation

struct LocateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "locate",
        abstract: "Print where a node is in the bucket, or which node a bucket object belongs to.",
        discussion: """
            The bucket names a node's record and cloud files by a name keyed by the master key \
            (records/NAME.rec, nodes/NAME/VERSION.ddc), so its owner sees no node ID. 'darkdisk locate \
            --node ID' prints the node's record key and the folder of its cloud files (under its ID for a \
            node last pushed by a darkdisk before keyed names, until its next push); 'darkdisk locate KEY' \
            prints the node a record or cloud-file key of the bucket belongs to, among the nodes this store \
            knows (as rclone's cryptdecode does for its names).
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: ArgumentHelp("The node to locate.", valueName: "ID"))
    var node: String?

    @Argument(help: ArgumentHelp("A key of the bucket (records/NAME.rec, nodes/NAME/VERSION.ddc) to name the node of.", valueName: "KEY"))
    var key: String?

    func validate() throws {
        guard (node == nil) != (key == nil) else { throw ValidationError("give either --node ID or a bucket KEY") }
        if let node, (try? NodeID(node)) == nil { throw ValidationError("'\(node)' is not a node ID") }
    }

    func run() throws {
        let manager = try storeOptions.open()
        if let node {
            let id = try NodeID(node)
            let keyed = try manager.outline.entry(id)?.keyedNames ?? true
            let name = CloudLayout.nodeName(id, keyed: keyed, with: manager)
            print("\(CloudLayout.recordsPrefix)\(name).rec")
            print("nodes/\(name)/")
            return
        }
        guard let key, let name = CloudLayout.recordName(ofKey: key)?.name ?? CloudLayout.nodeName(ofCloudFileKey: key) else {
            throw CLIError("'\(key ?? "")' is neither a record key (records/NAME.rec) nor a cloud-file key (nodes/NAME/VERSION.ddc)")
        }
        let known = Set(try manager.outline.entries().map(\.nodeID)).union(try manager.records.generations().keys)
        guard let id = known.first(where: { $0.rawValue == name || CloudLayout.nodeName($0, with: manager) == name }) else {
            throw CLIError("\(key) belongs to no node this store knows (pull first; an object of another store's key names none)")
        }
        print(id.rawValue)
    }
}
