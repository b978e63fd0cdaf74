import DarkDiskStore

/// What a command acts on, from `--node ID [--kind KIND]` or `--user ID --identity ID`.
enum FileTarget {
    case node(NodeID, FileKind)
    /// A user's avatar; a nil identity means the user's display identity (where the command allows it).
    case avatar(UserID, IdentityID?)

    /// The pool its files belong to.
    var pool: Pool {
        switch self {
        case .node(_, let kind): kind.pool
        case .avatar: .avatars
        }
    }

    /// `kind` nil: a node's data. A kind with `--user` is refused: an avatar has no sections.
    static func parse(node: String?, kind: String?, user: String?, identity: String?, identityRequired: Bool = true) throws -> FileTarget {
        if user != nil, node == nil, let kind {
            throw CLIError("--kind \(kind) is for nodes; an avatar has no kinds")
        }
        switch (node, user, identity) {
        case (let node?, nil, nil):
            return .node(try NodeID(node), try FileKind.parseNodeKind(kind ?? "data"))
        case (nil, let user?, let identity?):
            return .avatar(try UserID(user), try IdentityID(identity))
        case (nil, let user?, nil) where !identityRequired:
            return .avatar(try UserID(user), nil)
        case (nil, _?, nil), (nil, nil, _?):
            throw CLIError(identityRequired ? "an avatar needs both --user and --identity" : "--identity needs --user")
        case (nil, nil, nil):
            throw CLIError("say what to act on: --node ID, or --user ID --identity ID")
        default:
            throw CLIError("use either --node or --user/--identity, not both")
        }
    }
}
