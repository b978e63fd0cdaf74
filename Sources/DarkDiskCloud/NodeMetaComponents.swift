/// The small parts of a node's cloud file that `downloadNodeMeta` can fetch without the data: the header
/// (section sizes) and the metadata and thumbnail sections, each by one range request.
public struct NodeMetaComponents: OptionSet, Sendable, Hashable {
    public let rawValue: Int

    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    public static let header = NodeMetaComponents(rawValue: 1 << 0)
    public static let metadata = NodeMetaComponents(rawValue: 1 << 1)
    public static let thumbnail = NodeMetaComponents(rawValue: 1 << 2)
    public static let all: NodeMetaComponents = [.header, .metadata, .thumbnail]
}
