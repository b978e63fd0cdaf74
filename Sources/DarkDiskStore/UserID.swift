/// A user's ID: 1 to 64 characters from `[A-Za-z0-9_-]`.
public struct UserID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) throws(DarkDiskError) {
        try ValidatedID.check(rawValue, what: "user ID")
        self.rawValue = rawValue
    }

    public var description: String { rawValue }
    public static func < (a: UserID, b: UserID) -> Bool { a.rawValue < b.rawValue }
}
