import DarkDiskStore

/// A time as the drive keeps it: seconds since 1970 and nanoseconds.
package struct DriveTime: Sendable, Equatable, Comparable {
    package var seconds: Int64
    package var nanoseconds: UInt32

    package init(seconds: Int64, nanoseconds: UInt32) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    /// A time given as seconds since 1970 with a fraction (as the index keeps change times); nil when it is
    /// not one a file system can show.
    init?(_ seconds: Double) {
        guard seconds.isFinite, abs(seconds) < 1e15 else { return nil }
        let whole = seconds.rounded(.down)
        self.init(seconds: Int64(whole), nanoseconds: UInt32(min(999_999_999, Int((seconds - whole) * 1e9))))
    }

    package static func < (a: DriveTime, b: DriveTime) -> Bool {
        (a.seconds, a.nanoseconds) < (b.seconds, b.nanoseconds)
    }
}

/// What a drive entry shows of itself, as `stat` tells it: its kind, permission bits, size, the bytes it
/// takes on this disk and its times. A time that is nil is one the drive does not know (the adapter shows
/// the mount's time).
package struct DriveAttributes: Sendable, Equatable {
    package var kind: NodeAttributes.Kind
    /// The mode's permission bits (and set-ID and sticky bits): `mode & 0o7777`.
    package var permissions: UInt32
    package var size: UInt64
    /// The bytes its content takes here (`st_blocks` × 512, rounded up).
    package var allocated: UInt64
    package var modified: DriveTime?
    package var changed: DriveTime?
    package var accessed: DriveTime?
    /// Its link count: 1 for a file or link; 2 and one per folder in it for a folder.
    package var links: UInt32 = 1
}
