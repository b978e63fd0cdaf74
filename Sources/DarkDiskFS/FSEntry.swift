import DarkDisk

/// A path of the mount (DESIGN §5), independent of its inode number.
enum FSEntry: Hashable, Sendable {
    case root
    case nodes
    case thumbs
    case avatars
    case nodeDirectory(NodeID)
    case nodeFile(NodeID, FileKind)
    case thumb(NodeID)
    case avatarDirectory(UserID)
    case avatarFile(UserID, IdentityID)

    var isDirectory: Bool {
        switch self {
        case .root, .nodes, .thumbs, .avatars, .nodeDirectory, .avatarDirectory: true
        case .nodeFile, .thumb, .avatarFile: false
        }
    }

    /// The parent folder, for `..` in listings.
    var parent: FSEntry {
        switch self {
        case .root, .nodes, .thumbs, .avatars: .root
        case .nodeDirectory: .nodes
        case .nodeFile(let id, _): .nodeDirectory(id)
        case .thumb: .thumbs
        case .avatarDirectory: .avatars
        case .avatarFile(let user, _): .avatarDirectory(user)
        }
    }

    /// The node and section a file entry shows (`/thumbs/<id>` is the node's thumbnail); nil for avatars and folders.
    var nodeSection: (NodeID, FileKind)? {
        switch self {
        case .nodeFile(let id, let kind): (id, kind)
        case .thumb(let id): (id, .thumbnail)
        default: nil
        }
    }

    /// A name for log lines: "node X data", "avatar U/I".
    var logName: String {
        switch self {
        case .nodeFile(let id, let kind): "node \(id) \(kind.rawValue)"
        case .thumb(let id): "node \(id) thumbnail"
        case .avatarFile(let user, let identity): "avatar \(user)/\(identity)"
        default: "directory"
        }
    }
}
