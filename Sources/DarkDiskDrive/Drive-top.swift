import DarkDiskStore

/// The top of the drive (`/files`) as a folder of its own: it is no node, so its mode and modification time
/// are this store's settings (the index's `drive.top` text), set by `chmod` and `utimensat` as any folder's
/// are (`cp -a SRC/. files/` sets them), and not synced.
extension Drive {
    /// The top's permission bits and modification time (nil: never set, the mount's time is shown).
    package func topAttributes() throws(DarkDiskError) -> DriveTopAttributes {
        if let known = top.withLock({ $0 }) { return known }
        let read = DriveTopAttributes(text: try store.text(Self.topKey)) ?? DriveTopAttributes(permissions: 0o755, modified: nil)
        top.withLock { $0 = read }
        return read
    }

    /// Sets the top's permission bits and modification time (either may be nil: kept).
    package func setTopAttributes(permissions: UInt32?, modified: DriveTime?) throws(DarkDiskError) {
        var attributes = try topAttributes()
        if let permissions { attributes.permissions = permissions & 0o7777 }
        if let modified { attributes.modified = modified }
        try store.setText(attributes.text, for: Self.topKey)
        top.withLock { $0 = attributes }
    }

    static let topKey = "drive.top"
}

/// The top of the drive's own attributes.
package struct DriveTopAttributes: Sendable, Equatable {
    package var permissions: UInt32
    package var modified: DriveTime?

    /// As the setting keeps them: octal mode, then seconds and nanoseconds if set.
    var text: String {
        String(permissions, radix: 8) + (modified.map { " \($0.seconds) \($0.nanoseconds)" } ?? "")
    }

    init(permissions: UInt32, modified: DriveTime?) {
        self.permissions = permissions
        self.modified = modified
    }

    init?(text: String?) {
        guard let parts = text?.split(separator: " "), let first = parts.first, let mode = UInt32(first, radix: 8), mode <= 0o7777 else { return nil }
        permissions = mode
        modified = nil
        if parts.count == 3, let seconds = Int64(parts[1]), let nanoseconds = UInt32(parts[2]), nanoseconds < 1_000_000_000 {
            modified = DriveTime(seconds: seconds, nanoseconds: nanoseconds)
        }
    }
}
