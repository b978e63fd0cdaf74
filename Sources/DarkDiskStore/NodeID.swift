/// A node's ID: 1 to 64 characters from `[A-Za-z0-9_-]`.
public struct NodeID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) throws(DarkDiskError) {
        try ValidatedID.check(rawValue, what: "node ID")
        self.rawValue = rawValue
    }

    public var description: String { rawValue }
    public static func < (a: NodeID, b: NodeID) -> Bool { a.rawValue < b.rawValue }

    /// A new node's ID: a random (version 4) UUID in lower case, as the remote's records name nodes. Drawn
    /// with `getrandom` (Foundation's `UUID()` opens, reads and closes `/dev/urandom` each time: a `tar x`
    /// makes thousands a second).
    public static func random() -> NodeID {
        var rng = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: 16)
        for half in 0..<2 {
            let value: UInt64 = rng.next()
            for index in 0..<8 { bytes[half * 8 + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
        }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if [4, 6, 8, 10].contains(index) { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return NodeID(unchecked: String(decoding: text, as: UTF8.self))
    }

    /// An ID made here from characters the check allows.
    private init(unchecked rawValue: String) {
        self.rawValue = rawValue
    }
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
