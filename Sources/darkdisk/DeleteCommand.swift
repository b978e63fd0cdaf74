import ArgumentParser
import DarkDisk

struct DeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete a node's stored files (or one of them), or a user's avatars (or one of them).",
        discussion: """
            Without --kind, every section of the node goes; without --identity, every avatar of the user. \
            Only local copies are deleted: a node the remote has stays listed (on the mount too) and is \
            downloaded again when read. A file that is open (on the mount, or by another command) is deleted \
            when it is closed.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @OptionGroup var targetOptions: TargetOptions

    func run() throws {
        let (node, kind, user, identity) = (targetOptions.node, targetOptions.kind, targetOptions.user, targetOptions.identity)
        switch (node, user) {
        case (let node?, nil):
            guard identity == nil else { throw CLIError("--identity goes with --user") }
            let id = try NodeID(node)
            let manager = try storeOptions.open()
            if let kind {
                let kind = try FileKind.parseNodeKind(kind)
                guard try manager.deleteNodeFile(id, kind: kind) else {
                    throw CLIError("node '\(id)' has no \(kind.rawValue) stored locally")
                }
            } else {
                guard try !manager.storedFiles(id).isEmpty else { throw CLIError("node '\(id)' has nothing stored locally") }
                try manager.deleteLocalFiles(of: id)
            }
        case (nil, let user?):
            guard kind == nil else { throw CLIError("--kind goes with --node") }
            let id = try UserID(user)
            let manager = try storeOptions.open()
            if let identity {
                guard try manager.deleteUserAvatar(id, identityID: IdentityID(identity)) else {
                    throw CLIError("user '\(id)' has no avatar for identity '\(identity)'")
                }
            } else {
                guard try !manager.storedAvatars(id).isEmpty else { throw CLIError("user '\(id)' has no avatar stored locally") }
                try manager.deleteUserAvatars(id)
            }
        case (nil, nil):
            throw CLIError("say what to delete: --node ID or --user ID")
        default:
            throw CLIError("use either --node or --user, not both")
        }
    }
}
