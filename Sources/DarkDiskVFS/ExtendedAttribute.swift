import DarkDiskSystem
import DarkDiskStore

/// One of the mount's extended attributes: which name addresses what, whether it can be written,
/// and the text of its values. Pure on purpose: no FUSE and no store, so that names and values can be checked
/// (and fuzzed) on their own; `FuseFileSystem` reads and applies them.
///
/// Values are short ASCII texts without a terminating NUL, as `getfattr` prints them: `0`/`1`, decimal integers,
/// `none`/`partial`/`full`. A written value may end in one newline (`echo 1 | …`); anything else around the
/// number, a sign where none is allowed, or more than `maxValueLength` bytes makes it invalid.
package enum ExtendedAttribute: Hashable, Sendable {
    /// `user.darkdisk.persistent` of a file: `1` when it is persistent, `0` when it belongs to its cache pool.
    case persistent
    /// `user.darkdisk.expiration` of a file: its own expiration in seconds (`0`: the pool's default, `<0`: never).
    case expiration
    /// `user.darkdisk.local` of a file: how much of it is on this machine (read-only).
    case local
    /// `user.darkdisk.sync` of a file: where its node stands with the remote (read-only).
    case sync
    /// `user.darkdisk.pool.<pool>.<field>` of the mount root.
    case pool(Pool, PoolField)
    /// `user.darkdisk.node` of a drive entry (`/files`): the node ID behind it (read-only).
    case node
    /// `user.darkdisk.pin` of a drive or node entry, or the root: `1` keep on this device, `0` may be freed.
    /// Reads the pin in force (its own or inherited from the folders above); removing it makes the entry
    /// inherit again.
    case pin
    /// `user.darkdisk.remote` of the mount root: `online`, or `offline since TIME` (read-only).
    case remote

    /// The per-pool attributes of the mount root.
    package enum PoolField: String, CaseIterable, Sendable {
        /// Max bytes of cache files (writable; lowering it evicts at once).
        case maxSize = "max_size"
        /// Seconds before a cache file with expiration 0 expires (writable; `0` or less: never).
        case defaultExpiration = "default_expiration"
        /// Bytes of all the pool's files (read-only).
        case size
        /// Bytes of the pool's persistent files (read-only).
        case persistentSize = "persistent_size"
        /// Bytes of the pool's cache files (read-only).
        case cachedSize = "cached_size"
    }

    /// What carries an attribute: a file of the mount, its root folder, or any entry of the drive (a drive
    /// file is a `file` too). Other folders carry none.
    enum Holder: Sendable {
        case file
        case root
        case drive
        /// What a pin can be set on: the root, `/files`, drive entries, `/nodes/<id>` and its files.
        case pinnable
    }

    /// How much of a file is on this machine (`user.darkdisk.local`).
    enum Locality: String, Sendable {
        /// Nothing stored: the file is only in the remote.
        case absent = "none"
        /// A download of the node's data is under way (or was cut) and some bytes have arrived.
        case partial
        /// The file is stored.
        case full
    }

    /// Where a file's node stands with the remote (`user.darkdisk.sync`).
    enum SyncState: String, Sendable {
        /// The remote has the node as this store knows it.
        case synced
        /// A local change waits in the upload queue.
        case pending
        /// A process is uploading the node's change.
        case uploading
        /// The last upload of the change failed; it stays queued.
        case failed
        /// The node is a conflict copy this store made (the remote had changed under its change).
        case conflict
        /// The node is only in this store and not queued (imported, never pushed).
        case local
    }

    /// A value read from the store, to be shown as an attribute's text.
    enum Value: Equatable, Sendable {
        case flag(Bool)
        case seconds(Double)
        case bytes(UInt64)
        case locality(Locality)
        case sync(SyncState)
        case node(NodeID)
        /// `partial` with the share of the file that has arrived (`partial 42%`).
        case partial(percent: Int)
        case text(String)

        /// The text `getfattr` shows (no trailing newline or NUL).
        var text: String {
            switch self {
            case .flag(let on): on ? "1" : "0"
            case .seconds(let seconds): String(ExtendedAttribute.wholeSeconds(seconds))
            case .bytes(let bytes): String(bytes)
            case .locality(let locality): locality.rawValue
            case .sync(let state): state.rawValue
            case .node(let id): id.rawValue
            case .partial(let percent): "partial \(percent)%"
            case .text(let text): text
            }
        }
    }

    /// A validated write: what `setxattr` of an attribute asks the store to do.
    package enum Assignment: Equatable, Sendable {
        case persistent(Bool)
        case expiration(Int64)
        case maxSize(Pool, UInt64)
        case defaultExpiration(Pool, Int64)
        case pin(Bool)
        /// `user.darkdisk.local` set to `none`: drop the local copy.
        case evict

        /// The value as the attribute reads afterwards, for log lines.
        var text: String {
            switch self {
            case .persistent(let on): on ? "1" : "0"
            case .expiration(let seconds), .defaultExpiration(_, let seconds): String(seconds)
            case .maxSize(_, let bytes): String(bytes)
            case .pin(let on): on ? "1" : "0"
            case .evict: "none"
            }
        }
    }

    /// Why a name or value was refused; `VFSErrno` turns it into the errno `getfattr`/`setfattr` report.
    package struct Failure: DarkDiskFailure, Equatable {
        package enum Code: Sendable, Equatable {
            /// No such attribute on this inode (`ENODATA`).
            case noSuchAttribute
            /// The value is not one the attribute takes (`EINVAL`).
            case invalidValue
            /// The attribute is read-only, or ours cannot be removed (`EPERM`).
            case readOnly
            /// `XATTR_CREATE` of an attribute that always exists (`EEXIST`).
            case exists
            /// Flags other than `XATTR_CREATE`/`XATTR_REPLACE` (`EINVAL`).
            case unsupportedFlags
            /// The file is not stored on this machine, so it has nothing to migrate or expire (`EREMOTE`).
            case notLocal
        }

        package let code: Code
        package let message: String

        init(_ code: Code, _ message: String) {
            self.code = code
            self.message = message
        }

    }

    /// The common prefix of every name.
    static let prefix = "user.darkdisk."
    /// The longest value accepted by a write; longer ones are refused without being copied.
    package static let maxValueLength = 64
    /// `setxattr` flags (`<sys/xattr.h>`).
    static let createFlag: Int32 = 1
    static let replaceFlag: Int32 = 2

    /// Every attribute, files' first, in the order `listxattr` gives them.
    package static let all: [ExtendedAttribute] = names(for: .file) + names(for: .root) + names(for: .drive) + names(for: .pinnable)

    private static let byName: [String: ExtendedAttribute] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// The attributes an inode of this kind lists and answers.
    static func names(for holder: Holder) -> [ExtendedAttribute] {
        switch holder {
        case .file: [.persistent, .expiration, .local, .sync]
        case .root: Pool.allCases.flatMap { pool in PoolField.allCases.map { ExtendedAttribute.pool(pool, $0) } } + [.remote]
        case .drive: [.node]
        case .pinnable: [.pin]
        }
    }

    /// The attribute called `name` (the raw bytes the kernel passed, without the NUL), if it is one of ours.
    /// Bytes that are not UTF-8, odd characters and other namespaces simply match nothing.
    package init?(name: some Collection<UInt8>) {
        guard name.count <= 255, let text = String(validating: name, as: UTF8.self), let attribute = Self.byName[text] else { return nil }
        self = attribute
    }

    /// The full name, e.g. `user.darkdisk.pool.data.max_size`.
    package var name: String {
        switch self {
        case .persistent: Self.prefix + "persistent"
        case .expiration: Self.prefix + "expiration"
        case .local: Self.prefix + "local"
        case .sync: Self.prefix + "sync"
        case .pool(let pool, let field): Self.prefix + "pool.\(pool.rawValue).\(field.rawValue)"
        case .node: Self.prefix + "node"
        case .pin: Self.prefix + "pin"
        case .remote: Self.prefix + "remote"
        }
    }

    /// What carries the attribute.
    var holder: Holder {
        switch self {
        case .persistent, .expiration, .local, .sync: .file
        case .pool: .root
        case .node: .drive
        case .pin: .pinnable
        case .remote: .root
        }
    }

    /// Whether `setxattr` may change it.
    package var isWritable: Bool {
        switch self {
        case .persistent, .expiration, .pin, .local: true
        case .sync, .node, .remote: false
        case .pool(_, let field): field == .maxSize || field == .defaultExpiration
        }
    }

    /// The `listxattr` reply for `attributes`: each name followed by a NUL.
    static func nameList(_ attributes: [ExtendedAttribute]) -> [UInt8] {
        attributes.flatMap { Array($0.name.utf8) + [0] }
    }

    /// Checks a written value and says what it asks for. Refuses read-only attributes, values longer than
    /// `maxValueLength` bytes (before looking at them), and anything but the attribute's own syntax.
    package func assignment(from value: some BidirectionalCollection<UInt8>) throws(Failure) -> Assignment {
        guard isWritable else { throw Failure(.readOnly, "\(name) is read-only") }
        guard value.count <= Self.maxValueLength else {
            throw Failure(.invalidValue, "\(name): a value of \(value.count) bytes is too long (at most \(Self.maxValueLength))")
        }
        switch self {
        case .persistent:
            return .persistent(try Self.flag(value, for: name))
        case .expiration:
            return .expiration(try Self.integer(value, for: name))
        case .pool(let pool, .maxSize):
            let bytes = try Self.integer(value, for: name)
            guard bytes >= 0 else { throw Failure(.invalidValue, "\(name) takes a number of bytes, not a negative number") }
            return .maxSize(pool, UInt64(bytes))
        case .pool(let pool, .defaultExpiration):
            return .defaultExpiration(pool, try Self.integer(value, for: name))
        case .pin:
            return .pin(try Self.flag(value, for: name))
        case .local:
            var bytes = value[...]
            if bytes.last == UInt8(ascii: "\n") { bytes = bytes.dropLast() }
            guard bytes.elementsEqual("none".utf8) else { throw Failure(.invalidValue, "\(name) can only be set to none (drop the local copy)") }
            return .evict
        case .sync, .pool, .node, .remote:
            throw Failure(.readOnly, "\(name) is read-only")
        }
    }

    /// `0` or `1` (as `integer` spells them), as false or true.
    static func flag(_ value: some BidirectionalCollection<UInt8>, for name: String) throws(Failure) -> Bool {
        switch try integer(value, for: name) {
        case 0: return false
        case 1: return true
        default: throw Failure(.invalidValue, "\(name) takes 0 or 1")
        }
    }

    /// A decimal integer that fits an `Int64`: an optional `-`, then 1 to 19 ASCII digits, then at most one
    /// newline. No `+`, no spaces, no NUL, no other bytes.
    package static func integer(_ value: some BidirectionalCollection<UInt8>, for name: String) throws(Failure) -> Int64 {
        var bytes = value[...]
        if bytes.last == UInt8(ascii: "\n") { bytes = bytes.dropLast() }
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { bytes = bytes.dropFirst() }
        guard !bytes.isEmpty else { throw Failure(.invalidValue, "\(name) takes a decimal integer; the value is empty") }
        var magnitude: UInt64 = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else {
                throw Failure(.invalidValue, "\(name) takes a decimal integer; the value has the byte 0x\(String(byte, radix: 16))")
            }
            let (times, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflow1, !overflow2, sum <= UInt64(Int64.max) + (negative ? 1 : 0) else {
                throw Failure(.invalidValue, "\(name): the value is out of range")
            }
            magnitude = sum
        }
        return negative ? Int64(truncatingIfNeeded: 0 &- magnitude) : Int64(magnitude)
    }

    /// Seconds as a whole number for display, clamped to `Int64` (the store keeps them as a `Double`).
    static func wholeSeconds(_ seconds: Double) -> Int64 {
        guard seconds.isFinite else { return seconds > 0 ? .max : seconds < 0 ? .min : 0 }
        if seconds >= 9.223372036854775807e18 { return .max }
        if seconds <= -9.223372036854775808e18 { return .min }
        return Int64(seconds.rounded(.towardZero))
    }
}
