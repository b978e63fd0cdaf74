import ArgumentParser
import DarkDiskStore
import DarkDiskCloud
import Foundation

struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Upload a node (a new file, or what the store holds) with its record, or a user's avatar.",
        discussion: """
            With FILE, FILE (and --thumbnail and --metadata) becomes the node's content in the store, kept \
            persistently until it is uploaded; without FILE, what the store holds of the node is uploaded. \
            Either way the change is queued in the store's index (it survives a restart or a kill) and push \
            waits for the upload, unless --no-wait (then 'darkdisk sync' or a mount's daemon uploads it). \
            The cloud file is composed from the store's encrypted files: no plaintext is written to disk. \
            Once uploaded, files imported with --migrate-after-upload become cache files and \
            --delete-after-upload ones are deleted; a FILE push's new content moves to the cache pool \
            (unless the node's data was kept persistently before). With --user and --identity, FILE is the \
            identity's avatar image, recorded in the user's record in the remote.

            The record is replaced only if it is still the one this store last saw (pulled or pushed). If \
            another machine changed the node first, nothing is lost: the node keeps the remote's version, \
            the local change is uploaded as a new node named 'NAME (conflict HOST YYYY-MM-DD HHMMSS).EXT' in the \
            same folder, a line on stderr names it, 'darkdisk status' lists it, and push exits with status 3.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: ArgumentHelp("The node's new plaintext data, or the avatar image (none: upload what the store holds of the node; for a node whose data is only the remote's, rewrite its record alone, e.g. to rename it with --name).", valueName: "FILE"))
    var file: String?

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

    @Flag(help: "Queue the upload and return at once (a mount's daemon or 'darkdisk sync' uploads it).")
    var noWait = false

    func run() async throws {
        let target = try FileTarget.parse(node: node, kind: nil, user: user, identity: identity)
        if let parent { _ = try NodeID(parent) }
        if let name, !NodeRecord.isValidName(name) { throw CLIError("invalid --name: at most 255 bytes, no NUL") }
        func contents(_ path: String?, _ what: String) throws -> Data? {
            guard let path else { return nil }
            guard let data = FileManager.default.contents(atPath: path) else { throw CLIError("cannot read \(what) \(path)") }
            return data
        }
        if let file {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) else {
                throw CLIError("cannot read \(file): no such file")
            }
            guard !isDirectory.boolValue else { throw CLIError("cannot push \(file): it is a directory (push takes one file)") }
        }
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
            if let file {
                try await sync.queuePush(dataFile: file, nodeID: id, name: name, parentID: parent, thumbnail: thumbnailData, metadata: metadataData)
            } else {
                guard thumbnailData == nil, metadataData == nil else { throw CLIError("--thumbnail and --metadata go with FILE") }
                // Data of its own (imported here) goes up; a node whose data is only the remote's (not stored,
                // or a downloaded copy) gets its record rewritten alone: a rename or move, nothing downloaded.
                let data = try await manager.files.storedFile(id, kind: .data)
                if let data, try await !data.isRemoteVersion(of: manager.outline.entry(id)) {
                    try await manager.uploadQueue.add(id, name: name, parentID: parent)
                } else if try await manager.outline.entry(id) != nil {
                    try await manager.uploadQueue.addRecordChange(id, name: name, parentID: parent)
                } else {
                    throw CLIError("node '\(id)' has no data stored locally to upload (give FILE, or 'darkdisk fetch' it first)")
                }
            }
            guard !noWait else { return }
            let result = try await Self.waitForUpload(of: id, sync: sync)
            if let conflict = result?.conflict {
                FileHandle.standardError.write(Data("darkdisk: node '\(id)' changed in \(url) since this store last saw it; the remote's version kept it, and this store's change was uploaded as node '\(conflict.nodeID)' named '\(conflict.name)'\n".utf8))
                throw ExitCode(3)
            }
        case .avatar(let user, let identity?):
            guard let file else { throw CLIError("give the avatar image: push FILE --user ID --identity ID") }
            guard name == nil, parent == nil, thumbnailData == nil, metadataData == nil, !noWait else {
                throw CLIError("--name, --parent, --thumbnail, --metadata and --no-wait are for nodes, not avatars")
            }
            try await sync.pushUserIdentity(user, identityID: identity, avatar: try contents(file, "avatar"), display: display)
        case .avatar(_, nil):
            preconditionFailure("FileTarget.parse requires an identity here")
        }
    }

    /// Uploads the node's queued change here, or waits while another process (a mount's daemon) uploads it.
    /// Nil when another process did it.
    static func waitForUpload(of id: NodeID, sync: CloudSync) async throws -> CloudSync.PushResult? {
        while true {
            if let result = try await sync.uploadQueued(id) { return result }
            guard let queued = try await sync.manager.uploadQueue.change(of: id) else { return nil }
            if queued.state == .failed { throw CLIError("the upload of node '\(id)' failed: \(queued.lastError ?? "unknown error")") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}
