/// A node's ID: 1 to 64 characters from `[A-Za-z0-9_-]`.
public struct NodeID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) throws(DarkDiskError) {
        try ValidatedID.check(rawValue, what: "node ID")
        self.rawValue = rawValue
    }

    public var description: String { rawValue }
    public static func < (a: NodeID, b: NodeID) -> Bool { a.rawValue < b.rawValue }
}

/// Coded as its string; decoding validates it like `init(_:)`.
extension NodeID: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        self = try NodeID(text)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
