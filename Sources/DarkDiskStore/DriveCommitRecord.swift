import DarkDiskCrypto
import Foundation

/// One drive file's commit as the drive's journal keeps it until the index has it (`DriveCommitJournal`):
/// the rows the commit's transaction writes, by value, so that a daemon killed before that transaction ran
/// has it run at the store's next opening. Or, when `removal` is set, an `unlink` of a file or link: the
/// node leaves its folder when the index takes the record (its file fields are then empty). Its frame (Sources/DarkDiskDrive/README.md, "The drive's commit journal"):
/// the bytes `DDJ1`, the payload's length and its CRC-32 (both little-endian 32-bit), then the payload; in a
/// store with a passphrase `DDJ2`, the payload sealed (`SealedMessage`, it names a new file), as the index is
/// encrypted there.
struct DriveCommitRecord: Sendable, Equatable {
    /// Its place in the journal; the index keeps the last one it has (`driveJournal.appliedThrough`).
    var sequence: UInt64
    var nodeID: String
    /// The stored file's random name (in the persistent files' folder), already in place.
    var fileName: String
    var format: UInt8
    var fileWrappedKey: Data
    var storedSize: Int64
    var plaintextSize: Int64
    /// When it was committed: the file row's times, the upload's queueing time.
    var time: Double
    /// Permission bits set since the last commit.
    var mode: Int64?
    /// Modification time set since the last commit (seconds, nanoseconds).
    var modified: Modified?
    /// The node's row, when this is a new file's first commit.
    var newNode: NewNode?
    /// The file ID in the version's header, when it is a cloud file (`FileRecord.cloudFileID`). Written last
    /// and only when present, so records written before it read as they were.
    var cloudFileID: Data?
    /// Set when this record removes the node from the drive instead (its frame is `DDR1`, or `DDR2` sealed).
    var removal: Removal?

    /// Where the node removed was, as the `unlink` found it: a name that waits for the index is looked up
    /// after the index has it.
    struct Removal: Sendable, Equatable {
        var parentID: String?
        var name: String
    }

    struct Modified: Sendable, Equatable {
        var seconds: Int64
        var nanoseconds: Int64
    }

    /// The `node` row of a new file, column by column.
    struct NewNode: Sendable, Equatable {
        var wrappedKey: Data
        var name: String
        var parentID: String?
        var created: Double
        var type: String
        var mode: Int64
        var mtime: Int64?
        var mtimeNsec: Int64
        var target: String?
        var xattrs: Data?
    }

    static let magic: [UInt8] = Array("DDJ1".utf8)
    /// The frame of a sealed payload.
    static let sealedMagic: [UInt8] = Array("DDJ2".utf8)
    /// The frames of a removal, in the clear and sealed.
    static let removalMagic: [UInt8] = Array("DDR1".utf8)
    static let sealedRemovalMagic: [UInt8] = Array("DDR2".utf8)
    /// What a sealed payload is bound to.
    static let sealingContext: [UInt8] = Array("darkdisk drive journal 1".utf8)
    /// Magic, length, CRC.
    static let frameHeaderSize = 12
    /// A payload longer than this is not a record (a torn or foreign file): a new node's extended attributes
    /// are at most 64 KiB, a name 255 bytes.
    static let maximumPayload = 1 << 20

    /// The record framed for the journal, its payload sealed under `key` if given.
    func framed(sealedWith key: SymmetricKey? = nil) throws(CryptoError) -> [UInt8] {
        var payload = Writer()
        if let removal {
            payload.u64(sequence)
            payload.string(nodeID)
            payload.optional(removal.parentID) { $0.string($1) }
            payload.string(removal.name)
            payload.f64(time)
            return try Self.frame(payload.bytes, magic: key == nil ? Self.removalMagic : Self.sealedRemovalMagic, key: key)
        }
        payload.u64(sequence)
        payload.string(nodeID)
        payload.string(fileName)
        payload.bytes.append(format)
        payload.data(fileWrappedKey)
        payload.i64(storedSize)
        payload.i64(plaintextSize)
        payload.f64(time)
        payload.optional(mode) { $0.i64($1) }
        payload.optional(modified) { $0.i64($1.seconds); $0.i64($1.nanoseconds) }
        payload.optional(newNode) { writer, node in
            writer.data(node.wrappedKey)
            writer.string(node.name)
            writer.optional(node.parentID) { $0.string($1) }
            writer.f64(node.created)
            writer.string(node.type)
            writer.i64(node.mode)
            writer.optional(node.mtime) { $0.i64($1) }
            writer.i64(node.mtimeNsec)
            writer.optional(node.target) { $0.string($1) }
            writer.optional(node.xattrs) { $0.data($1) }
        }
        if let cloudFileID { payload.optional(cloudFileID) { $0.data($1) } }
        return try Self.frame(payload.bytes, magic: key == nil ? Self.magic : Self.sealedMagic, key: key)
    }

    /// `payload` in a frame, sealed under `key` if given.
    private static func frame(_ payload: [UInt8], magic: [UInt8], key: SymmetricKey?) throws(CryptoError) -> [UInt8] {
        let body = try key.map { (key) throws(CryptoError) in try SealedMessage.seal(payload, key: key, context: Self.sealingContext) } ?? payload
        var frame = Writer()
        frame.bytes.reserveCapacity(Self.frameHeaderSize + body.count)
        frame.bytes.append(contentsOf: magic)
        frame.u32(UInt32(body.count))
        frame.u32(CRC32.checksum(body))
        frame.bytes.append(contentsOf: body)
        return frame.bytes
    }

    /// The records framed one after another in `bytes`, and how many bytes they take: reading stops at the
    /// first frame that is cut short or does not check out (a write the daemon was killed in; its `close`
    /// never returned), or is sealed and does not open with `key`.
    static func records(in bytes: [UInt8], key: SymmetricKey? = nil) -> (records: [DriveCommitRecord], length: Int) {
        var records: [DriveCommitRecord] = []
        var offset = 0
        while bytes.count - offset >= frameHeaderSize {
            let frameMagic = Array(bytes[offset..<offset + 4])
            let isRemoval = frameMagic == removalMagic || frameMagic == sealedRemovalMagic
            guard isRemoval || frameMagic == magic || frameMagic == sealedMagic else { break }
            var header = Reader(bytes: bytes, offset: offset + 4)
            guard let length = try? Int(header.u32()), let crc = try? header.u32(), length <= maximumPayload,
                  bytes.count - offset - frameHeaderSize >= length else { break }
            let start = offset + frameHeaderSize
            let body = bytes[start..<start + length]
            guard CRC32.checksum(body) == crc else { break }
            let record: DriveCommitRecord?
            let decode = isRemoval ? decodeRemoval : decode
            if frameMagic == sealedMagic || frameMagic == sealedRemovalMagic {
                guard let key, let payload = try? SealedMessage.open(Array(body), key: key, context: sealingContext) else { break }
                record = try? decode(Reader(bytes: payload, offset: 0, end: payload.count))
            } else {
                record = try? decode(Reader(bytes: bytes, offset: start, end: start + length))
            }
            guard let record else { break }
            records.append(record)
            offset = start + length
        }
        return (records, offset)
    }

    private static func decode(_ reader: Reader) throws(Malformed) -> DriveCommitRecord {
        var reader = reader
        var record = DriveCommitRecord(
            sequence: try reader.u64(), nodeID: try reader.string(), fileName: try reader.string(), format: try reader.u8(),
            fileWrappedKey: try reader.data(), storedSize: try reader.i64(), plaintextSize: try reader.i64(), time: try reader.f64())
        if try reader.present() { record.mode = try reader.i64() }
        if try reader.present() { record.modified = Modified(seconds: try reader.i64(), nanoseconds: try reader.i64()) }
        if try reader.present() {
            let wrappedKey = try reader.data(), name = try reader.string()
            let parentID = try reader.present() ? try reader.string() : nil
            let created = try reader.f64(), type = try reader.string(), mode = try reader.i64()
            let mtime = try reader.present() ? try reader.i64() : nil
            let mtimeNsec = try reader.i64()
            let target = try reader.present() ? try reader.string() : nil
            let xattrs = try reader.present() ? try reader.data() : nil
            record.newNode = NewNode(wrappedKey: wrappedKey, name: name, parentID: parentID, created: created, type: type, mode: mode,
                                     mtime: mtime, mtimeNsec: mtimeNsec, target: target, xattrs: xattrs)
        }
        if reader.offset < reader.end {
            // Written only when present: an absent flag here is a byte too many.
            guard try reader.present() else { throw Malformed() }
            record.cloudFileID = try reader.data()
        }
        guard reader.offset == reader.end else { throw Malformed() }
        return record
    }

    private static func decodeRemoval(_ reader: Reader) throws(Malformed) -> DriveCommitRecord {
        var reader = reader
        let sequence = try reader.u64(), nodeID = try reader.string()
        let parentID = try reader.present() ? try reader.string() : nil
        let name = try reader.string(), time = try reader.f64()
        guard reader.offset == reader.end else { throw Malformed() }
        return removal(sequence: sequence, nodeID: nodeID, parentID: parentID, name: name, time: time)
    }

    /// A record that removes node `nodeID`, named `name` in folder `parentID`, from the drive.
    static func removal(sequence: UInt64, nodeID: String, parentID: String?, name: String, time: Double) -> DriveCommitRecord {
        var record = DriveCommitRecord(sequence: sequence, nodeID: nodeID, fileName: "", format: 0, fileWrappedKey: Data(), storedSize: 0,
                                       plaintextSize: 0, time: time)
        record.removal = Removal(parentID: parentID, name: name)
        return record
    }

    /// The folder and name whose lookups wait for this record: a new node's, or a removed one's.
    var name: (parentID: String?, name: String)? {
        if let newNode { return (newNode.parentID, newNode.name) }
        if let removal { return (removal.parentID, removal.name) }
        return nil
    }

    private init(sequence: UInt64, nodeID: String, fileName: String, format: UInt8, fileWrappedKey: Data, storedSize: Int64,
                 plaintextSize: Int64, time: Double) {
        self.sequence = sequence
        self.nodeID = nodeID
        self.fileName = fileName
        self.format = format
        self.fileWrappedKey = fileWrappedKey
        self.storedSize = storedSize
        self.plaintextSize = plaintextSize
        self.time = time
    }

    init(sequence: UInt64, nodeID: String, fileName: String, format: UInt8, fileWrappedKey: Data, storedSize: Int64,
         plaintextSize: Int64, time: Double, mode: Int64?, modified: Modified?, newNode: NewNode?, cloudFileID: Data? = nil) {
        self.init(sequence: sequence, nodeID: nodeID, fileName: fileName, format: format, fileWrappedKey: fileWrappedKey,
                  storedSize: storedSize, plaintextSize: plaintextSize, time: time)
        self.mode = mode
        self.modified = modified
        self.newNode = newNode
        self.cloudFileID = cloudFileID
    }

    private struct Malformed: Error {}

    private struct Writer {
        var bytes: [UInt8] = []

        mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        mutating func i64(_ value: Int64) { u64(UInt64(bitPattern: value)) }
        mutating func f64(_ value: Double) { u64(value.bitPattern) }
        mutating func data(_ value: Data) {
            u32(UInt32(value.count))
            bytes.append(contentsOf: value)
        }
        mutating func string(_ value: String) { data(Data(value.utf8)) }
        mutating func optional<T>(_ value: T?, _ write: (inout Writer, T) -> Void) {
            guard let value else { bytes.append(0); return }
            bytes.append(1)
            write(&self, value)
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset: Int
        let end: Int

        init(bytes: [UInt8], offset: Int, end: Int? = nil) {
            self.bytes = bytes
            self.offset = offset
            self.end = end ?? bytes.count
        }

        mutating func take(_ count: Int) throws(Malformed) -> ArraySlice<UInt8> {
            guard count >= 0, end - offset >= count else { throw Malformed() }
            defer { offset += count }
            return bytes[offset..<offset + count]
        }
        mutating func u8() throws(Malformed) -> UInt8 { try take(1).first! }
        mutating func u32() throws(Malformed) -> UInt32 {
            try take(4).reversed().reduce(0) { $0 << 8 | UInt32($1) }
        }
        mutating func u64() throws(Malformed) -> UInt64 {
            try take(8).reversed().reduce(0) { $0 << 8 | UInt64($1) }
        }
        mutating func i64() throws(Malformed) -> Int64 { Int64(bitPattern: try u64()) }
        mutating func f64() throws(Malformed) -> Double { Double(bitPattern: try u64()) }
        mutating func data() throws(Malformed) -> Data { Data(try take(Int(try u32()))) }
        mutating func string() throws(Malformed) -> String {
            guard let value = String(validating: try take(Int(try u32())), as: UTF8.self) else { throw Malformed() }
            return value
        }
        mutating func present() throws(Malformed) -> Bool {
            switch try u8() {
            case 0: return false
            case 1: return true
            default: throw Malformed()
            }
        }
    }
}

/// CRC-32 (IEEE 802.3, the polynomial of zlib and gzip), to tell a whole journal record from a torn one.
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        (0..<8).reduce(UInt32(index)) { crc, _ in crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
    }

    static func checksum<Bytes: Collection>(_ bytes: Bytes) -> UInt32 where Bytes.Element == UInt8 {
        ~bytes.reduce(~UInt32(0)) { crc, byte in table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
    }
}
