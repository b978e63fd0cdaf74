import ArgumentParser
import DarkDiskStore

struct PersistCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "persist",
        abstract: "Move a node's file (or a user's avatars) between persistent storage and the cache pool.",
        discussion: "A file that is open (on the mount, or by another command) is copied and the original removed when it is closed.")

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: ArgumentHelp("The node whose file to move.", valueName: "ID"))
    var node: String?

    @Option(help: ArgumentHelp("Which section of the node: data (the default), thumbnail or metadata.", valueName: "KIND"))
    var kind: String?

    @Option(help: ArgumentHelp("Move this user's avatars instead.", valueName: "ID"))
    var user: String?

    @Argument(help: ArgumentHelp("on: keep until deleted; off: a cache file again.", valueName: "on|off"))
    var state: String

    func run() throws {
        let persistent: Bool
        switch state {
        case "on", "1", "true": persistent = true
        case "off", "0", "false": persistent = false
        default: throw CLIError("say 'on' or 'off', not '\(state)'")
        }
        switch (node, user) {
        case (let node?, nil):
            let id = try NodeID(node)
            let kind = try FileKind.parseNodeKind(kind ?? "data")
            guard try storeOptions.open().files.makeNodeFilePersistent(persistent, nodeID: id, kind: kind) else {
                throw CLIError("node '\(id)' has no \(kind.rawValue) stored locally")
            }
        case (nil, let user?):
            if let kind { throw CLIError("--kind \(kind) is for nodes; an avatar has no kinds") }
            let id = try UserID(user)
            let manager = try storeOptions.open()
            guard try !manager.files.storedAvatars(id).isEmpty else { throw CLIError("user '\(id)' has no avatar stored locally") }
            try manager.files.makeUserAvatarsPersistent(persistent, userID: id)
        case (nil, nil):
            throw CLIError("say what to move: --node ID or --user ID")
        default:
            throw CLIError("use either --node or --user, not both")
        }
    }
}
