/// One of a user's identities (ZeroDark.cloud's auth0ID): the node-ID characters plus `|`, `.` and `@`.
public struct IdentityID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) throws(DarkDiskError) {
        try ValidatedID.check(rawValue, what: "identity ID", extra: [UInt8(ascii: "|"), UInt8(ascii: "."), UInt8(ascii: "@")])
        guard rawValue != "." && rawValue != ".." else {
            throw DarkDiskError(.invalidID, "invalid identity ID '\(rawValue)'")
        }
        self.rawValue = rawValue
    }

    public var description: String { rawValue }
    public static func < (a: IdentityID, b: IdentityID) -> Bool { a.rawValue < b.rawValue }
}
