/// What a stored file holds. Node kinds are the sections of a node; avatars belong to a user identity.
public enum FileKind: String, Sendable, CaseIterable, Codable {
    case data
    case metadata
    case thumbnail
    case avatar

    /// The pool whose size limit and expiration govern this kind of file.
    public var pool: Pool {
        switch self {
        case .data, .metadata: .data
        case .thumbnail: .thumbnails
        case .avatar: .avatars
        }
    }
}
