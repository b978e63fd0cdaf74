import ArgumentParser
import DarkDisk
import DarkDiskCloud
import Foundation

struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Encrypt a file (with an optional thumbnail and metadata) into one cloud file and upload it with the node's record.",
        discussion: "Then the store's upload hooks fire: files imported with --migrate-after-upload become cache files, --delete-after-upload ones are deleted.")

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: ArgumentHelp("The node's plaintext data.", valueName: "FILE"))
    var file: String

    @Option(help: ArgumentHelp("The node to push.", valueName: "ID"))
    var node: String

    @Option(help: ArgumentHelp("The node's name in the outline.", valueName: "NAME"))
    var name: String?

    @Option(help: ArgumentHelp("The node's parent in the outline.", valueName: "ID"))
    var parent: String?

    @Option(help: ArgumentHelp("A thumbnail image to include.", valueName: "FILE"))
    var thumbnail: String?

    @Option(help: ArgumentHelp("Metadata (JSON) to include.", valueName: "FILE"))
    var metadata: String?

    func run() async throws {
        let id = try NodeID(node)
        if let parent { _ = try NodeID(parent) }
        if let name, name.utf8.count > 255 || name.contains("\0") { throw CLIError("invalid --name: at most 255 bytes, no NUL") }
        func contents(_ path: String?, _ what: String) throws -> Data? {
            guard let path else { return nil }
            guard let data = FileManager.default.contents(atPath: path) else { throw CLIError("cannot read \(what) \(path)") }
            return data
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw CLIError("cannot read \(file): no such file")
        }
        let thumbnailData = try contents(thumbnail, "thumbnail")
        let metadataData = try contents(metadata, "metadata")
        let manager = try storeOptions.open(create: true)
        let sync = CloudSync(manager: manager, remote: try StoreRemote.remote(for: manager))
        try await sync.push(dataFile: file, nodeID: id, name: name, parentID: parent, thumbnail: thumbnailData, metadata: metadataData)
    }
}
