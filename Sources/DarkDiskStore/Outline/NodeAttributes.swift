import Foundation

/// What a node is besides its content, as the drive (`/files`) shows it and its sealed record
/// carries it: a file, a folder or a symbolic link, its permission bits, its modification time to the
/// nanosecond, a link's target and the `user.*` extended attributes tools copy (`rsync -X`,
/// `cp --preserve=all`). A record written before these existed describes a file, mode 0644, of unknown time.
public struct NodeAttributes: Sendable, Equatable, Hashable, Codable {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case file, folder, symlink
    }

    public var kind: Kind
    /// Permission bits (`0o7777` at most: no file type bits).
    public var mode: UInt32
    /// Seconds since 1970 of the last change of the content (nil: unknown).
    public var modifiedSeconds: Int64?
    /// The nanoseconds within `modifiedSeconds`.
    public var modifiedNanoseconds: UInt32
    /// A symbolic link's target (nil for files and folders).
    public var target: String?
    /// `user.*` extended attributes by full name.
    public var extendedAttributes: [String: [UInt8]]

    /// The largest size of all of a node's extended attributes, names and values.
    public static let maxExtendedAttributesSize = 64 * 1024
    /// The longest symbolic link target (Linux's `PATH_MAX` less the NUL).
    public static let maxTargetSize = 4095

    public init(kind: Kind = .file, mode: UInt32? = nil, modifiedSeconds: Int64? = nil, modifiedNanoseconds: UInt32 = 0,
                target: String? = nil, extendedAttributes: [String: [UInt8]] = [:]) {
        self.kind = kind
        self.mode = mode ?? (kind == .file ? 0o644 : kind == .folder ? 0o755 : 0o777)
        self.modifiedSeconds = modifiedSeconds
        self.modifiedNanoseconds = modifiedNanoseconds
        self.target = target
        self.extendedAttributes = extendedAttributes
    }

    /// The bytes the extended attributes take: each name and value.
    public var extendedAttributesSize: Int {
        extendedAttributes.reduce(0) { $0 + $1.key.utf8.count + $1.value.count }
    }

    /// Why these attributes cannot describe a node, or nil when they can: permission bits beyond `0o7777`,
    /// nanoseconds of a second or more, a target on anything but a link (or none on a link, or one with a
    /// NUL or longer than 4,095 bytes), an extended attribute outside `user.`, or more than 64 KiB of them.
    public var problem: String? {
        if mode & ~0o7777 != 0 { return "mode \(String(mode, radix: 8)) has bits beyond 7777" }
        if modifiedNanoseconds >= 1_000_000_000 { return "modification time has \(modifiedNanoseconds) nanoseconds" }
        switch (kind, target) {
        case (.symlink, nil): return "a symbolic link without a target"
        case (.symlink, let target?):
            if target.isEmpty || target.utf8.count > Self.maxTargetSize || target.utf8.contains(0) {
                return "a symbolic link target that is empty, longer than \(Self.maxTargetSize) bytes or holds a NUL"
            }
        case (_, .some): return "a \(kind.rawValue) with a link target"
        case (_, nil): break
        }
        for name in extendedAttributes.keys where !name.hasPrefix("user.") || name.utf8.count > 255 || name.utf8.contains(0) || name == "user." {
            return "extended attribute '\(name)' is not a user.* name of at most 255 bytes"
        }
        if extendedAttributesSize > Self.maxExtendedAttributesSize {
            return "extended attributes of \(extendedAttributesSize) bytes (at most \(Self.maxExtendedAttributesSize))"
        }
        return nil
    }
}
