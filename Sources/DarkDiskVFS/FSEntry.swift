import DarkDiskStore

/// A path of the mount, independent of its inode number.
package enum FSEntry: Hashable, Sendable {
    case root
    case nodes
    case thumbs
    case avatars
    case nodeDirectory(NodeID)
    case nodeFile(NodeID, FileKind)
    case thumb(NodeID)
    case avatarDirectory(UserID)
    /// Boxed: with two IDs inline every entry (and every key of the inode table, millions of them for a
    /// large outline) would take twice the room of one with a node ID.
    indirect case avatarFile(UserID, IdentityID)
    /// `/files`: the top of the drive.
    case files
    /// A folder of the drive, by its node.
    case driveFolder(NodeID)
    /// A file of the drive, by its node: its content is the node's data.
    case driveFile(NodeID)
    /// A symbolic link of the drive, by its node.
    case driveLink(NodeID)

    var isDirectory: Bool {
        switch self {
        case .root, .nodes, .thumbs, .avatars, .nodeDirectory, .avatarDirectory, .files, .driveFolder: true
        case .nodeFile, .thumb, .avatarFile, .driveFile, .driveLink: false
        }
    }

    /// The parent folder, for `..` in listings (the kernel answers `..` itself; a drive entry names `/files`
    /// here, whatever folder it is in).
    var parent: FSEntry {
        switch self {
        case .root, .nodes, .thumbs, .avatars, .files: .root
        case .driveFolder, .driveFile, .driveLink: .files
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
        case .driveFile(let id): (id, .data)
        default: nil
        }
    }

    /// The node a drive entry shows (nil: not a drive entry, or `/files` itself).
    var driveNode: NodeID? {
        switch self {
        case .driveFolder(let id), .driveFile(let id), .driveLink(let id): id
        default: nil
        }
    }

    /// A name for log lines: "node X data", "avatar U/I".
    var logName: String {
        switch self {
        case .nodeFile(let id, let kind): "node \(id) \(kind.rawValue)"
        case .thumb(let id): "node \(id) thumbnail"
        case .avatarFile(let user, let identity): "avatar \(user)/\(identity)"
        case .driveFile(let id): "drive file (node \(id))"
        case .driveLink(let id): "drive link (node \(id))"
        default: "directory"
        }
    }
}
