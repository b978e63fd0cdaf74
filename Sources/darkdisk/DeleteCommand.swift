import ArgumentParser
import DarkDiskStore
import DarkDiskCloud

struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete a node's stored files (or one of them), or a user's avatars (or one of them); with --remote, the node everywhere.",
        discussion: """
            Without --kind, every section of the node goes; without --identity, every avatar of the user. \
            Only local copies are deleted: a node the remote has stays listed (on the mount too) and is \
            downloaded again when read. A file that is open (on the mount, or by another command) is deleted \
            when it is closed. With --remote, the node itself is deleted: its record goes from the remote (only \
            if it is still the one this store last saw: a change another machine made meanwhile is never \
            deleted unseen, and nothing is), then the node from this store; other machines drop it at their \
            next pull, and 'darkdisk gc' deletes its cloud files after the grace period.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @OptionGroup var targetOptions: TargetOptions

    @Flag(help: "Delete the node from the remote too (conditionally), and from this store.")
    var remote = false

    func run() async throws {
        let (node, kind, user, identity) = (targetOptions.node, targetOptions.kind, targetOptions.user, targetOptions.identity)
        guard !remote || (node != nil && kind == nil && user == nil) else {
            throw CLIError("--remote deletes a whole node: give --node ID, without --kind or --user")
        }
        switch (node, user) {
        case (let node?, nil):
            guard identity == nil else { throw CLIError("--identity goes with --user") }
            let id = try NodeID(node)
            let manager = try storeOptions.open()
            if remote {
                try await CloudSync(manager: manager, remote: try StoreRemote.remote(for: manager)).deleteNode(id)
            } else if let kind {
                let kind = try FileKind.parseNodeKind(kind)
                guard try await manager.files.deleteNodeFile(id, kind: kind) else {
                    throw CLIError("node '\(id)' has no \(kind.rawValue) stored locally")
                }
            } else {
                guard try await !manager.files.storedFiles(id).isEmpty else { throw CLIError("node '\(id)' has nothing stored locally") }
                try await manager.deleteLocalFiles(of: [id])
            }
        case (nil, let user?):
            guard kind == nil else { throw CLIError("--kind goes with --node") }
            let id = try UserID(user)
            let manager = try storeOptions.open()
            if let identity {
                guard try await manager.files.deleteUserAvatar(id, identityID: IdentityID(identity)) else {
                    throw CLIError("user '\(id)' has no avatar for identity '\(identity)'")
                }
            } else {
                guard try await !manager.files.storedAvatars(id).isEmpty else { throw CLIError("user '\(id)' has no avatar stored locally") }
                try await manager.files.deleteUserAvatars(id)
            }
        case (nil, nil):
            throw CLIError("say what to delete: --node ID or --user ID")
        default:
            throw CLIError("use either --node or --user, not both")
        }
    }
}
