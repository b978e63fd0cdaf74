/// The two layouts of an encrypted file; stored in header byte 5.
public enum CryptoFileFormat: UInt8, Sendable, Codable {
    /// One section holding the file's data, for locally cached content.
    case cacheFile = 1
    /// Three sections (metadata, thumbnail, data) so a cloud copy's small parts can be read without the data.
    case cloudFile = 2

    /// How many sections a file of this format has.
    public var sectionCount: Int {
        switch self {
        case .cacheFile: 1
        case .cloudFile: 3
        }
    }

    /// The section holding the file's content.
    public var dataSection: Int { sectionCount - 1 }
}
