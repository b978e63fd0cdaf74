import ArgumentParser
import DarkDisk
import DarkDiskCloud
import Foundation

struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Encrypt a file (with an optional thumbnail and metadata) into one cloud file and upload it with the node's record, or upload a user's avatar.",
        discussion: """
            For a node, the store's upload hooks fire afterwards: files imported with --migrate-after-upload \
            become cache files, --delete-after-upload ones are deleted. With --user and --identity, FILE is \
            the identity's avatar image, recorded in the user's record in the remote.

            The record is replaced only if it is still the one this store last saw (pulled or pushed). If \
            another machine changed the node first, nothing is lost: the node keeps the remote's version, \
            FILE is uploaded as a new node named 'NAME (conflict HOST YYYY-MM-DD HHMMSS)' in the same \
            folder, a line on stderr names it, 'darkdisk status' lists it, and push exits with status 3.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: ArgumentHelp("The node's plaintext data, or the avatar image.", valueName: "FILE"))
    var file: String

    @Option(help: ArgumentHelp("The node to push.", valueName: "ID"))
    var node: String?

    @Option(help: ArgumentHelp("Push an avatar for this user (with --identity).", valueName: "ID"))
    var user: String?

    @Option(help: ArgumentHelp("The user's identity the avatar belongs to.", valueName: "ID"))
    var identity: String?

    @Flag(help: "Make this identity the user's display identity.")
    var display = false

    @Option(help: ArgumentHelp("The node's name in the outline.", valueName: "NAME"))
    var name: String?

    @Option(help: ArgumentHelp("The node's parent in the outline.", valueName: "ID"))
    var parent: String?

    @Option(help: ArgumentHelp("A thumbnail image to include.", valueName: "FILE"))
    var thumbnail: String?

    @Option(help: ArgumentHelp("Metadata (JSON) to include.", valueName: "FILE"))
    var metadata: String?

    func run() async throws {
        let target = try FileTarget.parse(node: node, kind: nil, user: user, identity: identity)
        if let parent { _ = try NodeID(parent) }
        if let name, !NodeRecord.isValidName(name) { throw CLIError("invalid --name: at most 255 bytes, no NUL") }
        func contents(_ path: String?, _ what: String) throws -> Data? {
            guard let path else { return nil }
            guard let data = FileManager.default.contents(atPath: path) else { throw CLIError("cannot read \(what) \(path)") }
            return data
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) else {
            throw CLIError("cannot read \(file): no such file")
        }
        guard !isDirectory.boolValue else { throw CLIError("cannot push \(file): it is a directory (push takes one file)") }
        let thumbnailData = try contents(thumbnail, "thumbnail")
        let metadataData = try contents(metadata, "metadata")
        let created = !DiskManager.exists(at: storeOptions.location)
        let manager = try storeOptions.open(create: true)
        let (url, isDefault) = try StoreRemote.url(for: manager)
        if isDefault {
            // Not silent: a store that never got a remote keeps its pushes in a folder of its own.
            FileHandle.standardError.write(Data("darkdisk: \(created ? "created a new store at \(manager.location.dataDirectory); " : "")no remote is set, so this push goes to the store's own folder \(url) ('darkdisk remote set URL' attaches one)\n".utf8))
        }
        let sync = CloudSync(manager: manager, remote: try StoreRemote.remote(for: manager))
        switch target {
        case .node(let id, _):
            let result = try await sync.push(dataFile: file, nodeID: id, name: name, parentID: parent, thumbnail: thumbnailData, metadata: metadataData)
            if let conflict = result.conflict {
                FileHandle.standardError.write(Data("darkdisk: node '\(id)' changed in \(url) since this store last saw it; the remote's version kept it, and \(file) was uploaded as node '\(conflict.nodeID)' named '\(conflict.name)'\n".utf8))
                throw ExitCode(3)
            }
        case .avatar(let user, let identity?):
            guard name == nil, parent == nil, thumbnailData == nil, metadataData == nil else {
                throw CLIError("--name, --parent, --thumbnail and --metadata are for nodes, not avatars")
            }
            try await sync.pushUserIdentity(user, identityID: identity, avatar: try contents(file, "avatar"), display: display)
        case .avatar(_, nil):
            preconditionFailure("FileTarget.parse requires an identity here")
        }
    }
}
