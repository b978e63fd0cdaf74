@testable import DarkDiskStore
import DarkDiskCrypto
import Foundation
import Testing

/// The drive's commit journal (`DriveCommitRecord`): records survive their framing unchanged, the bytes are
/// those of the documented format (checked against an encoder and a CRC-32 written here from the format, not
/// from the code), and reading stops at the first frame that is torn, foreign, oversized or malformed. The
/// journal is replayed into the index at the store's next opening, so it must never replay a torn or foreign
/// record, nor lose a whole one that precedes it.
@Suite struct DriveCommitRecordTests {
    /// Every kind of record (each optional absent, each present, names outside ASCII, big extended
    /// attributes) reads back equal and in order, and the whole journal is counted as read.
    @Test func recordsReadBackAsTheyWereWritten() throws {
        let records = [
            bareRecord(sequence: 1),
            fullRecord(sequence: 2, parentID: nil, xattrs: Data()),
            fullRecord(sequence: 3, parentID: "parent-café ✓", xattrs: Data((0..<65_536).map { UInt8(truncatingIfNeeded: $0 * 7) })),
            DriveCommitRecord(sequence: .max, nodeID: "", fileName: "", format: .max, fileWrappedKey: Data(), storedSize: .min,
                              plaintextSize: .max, time: -0.0, mode: .min, modified: .init(seconds: .min, nanoseconds: .max),
                              newNode: .init(wrappedKey: Data(), name: "", parentID: "", created: -1e300, type: "", mode: -1,
                                             mtime: .max, mtimeNsec: .min, target: "", xattrs: nil)),
            bareRecord(sequence: 5),
        ]
        var journal: [UInt8] = []
        for record in records {
            let framed = try record.framed()
            #expect(framed == frame(encode(record)), "record \(record.sequence) is framed as documented")
            journal += framed
        }
        let read = DriveCommitRecord.records(in: journal)
        #expect(read.records == records)
        #expect(read.length == journal.count)
        #expect(DriveCommitRecord.records(in: []).records.isEmpty)
        #expect(DriveCommitRecord.records(in: []).length == 0)
    }

    /// A record's bytes are exactly those the documented format gives, with the CRC-32 zlib computes, and
    /// those bytes read back as the record: a journal written by one build is read by the next.
    @Test func theFrameIsTheDocumentedFormat() throws {
        #expect(crc32(Array("123456789".utf8)) == 0xCBF4_3926, "the test's CRC-32 is the standard one")

        let record = fixtureRecord()
        var payload = Encoder()
        payload.u64(7)
        payload.string("n1")
        payload.string("f")
        payload.bytes.append(2)
        payload.data(Data([0xAA, 0xBB]))
        payload.i64(100)
        payload.i64(90)
        payload.f64(1.5)
        payload.bytes.append(1); payload.i64(0o644)
        payload.bytes.append(1); payload.i64(10); payload.i64(20)
        payload.bytes.append(1)
        payload.data(Data([1, 2, 3]))
        payload.string("café")
        payload.bytes.append(1); payload.string("p")
        payload.f64(2.25)
        payload.string("file")
        payload.i64(420)
        payload.bytes.append(0)
        payload.i64(5)
        payload.bytes.append(0)
        payload.bytes.append(1); payload.data(Data())
        #expect(payload.bytes.count == 138)
        #expect(payload.bytes == encode(record), "the test's encoder agrees with the format spelled out")

        // zlib's value for this payload, computed apart from the code under test:
        // python3 -c 'import struct,zlib; s=lambda b: struct.pack("<I",len(b))+b; print(hex(zlib.crc32(
        //   struct.pack("<Q",7)+s(b"n1")+s(b"f")+b"\x02"+s(b"\xaa\xbb")+struct.pack("<qqd",100,90,1.5)
        //   +b"\x01"+struct.pack("<q",0o644)+b"\x01"+struct.pack("<qq",10,20)+b"\x01"+s(b"\x01\x02\x03")
        //   +s("café".encode())+b"\x01"+s(b"p")+struct.pack("<d",2.25)+s(b"file")+struct.pack("<q",420)
        //   +b"\x00"+struct.pack("<q",5)+b"\x00"+b"\x01"+s(b""))))'   # 0x9ed010bb
        let zlibCRC: UInt32 = 0x9ED0_10BB
        #expect(crc32(payload.bytes) == zlibCRC)
        #expect(CRC32.checksum(payload.bytes) == zlibCRC)

        let expected = Array("DDJ1".utf8) + [138, 0, 0, 0] + [0xBB, 0x10, 0xD0, 0x9E] + payload.bytes
        #expect(frame(payload.bytes) == expected)
        #expect(try record.framed() == expected)
        let read = DriveCommitRecord.records(in: expected)
        #expect(read.records == [record])
        #expect(read.length == expected.count)
    }

    /// In a store with a passphrase each payload is sealed (`DDJ2`): a new file's name is not in the journal's
    /// bytes, the records read back with the key, and without it (or with another) reading stops there; a
    /// journal written before (`DDJ1` frames) still reads.
    @Test func sealedRecordsHoldNoNameAndNeedTheKey() throws {
        let key = SymmetricKey.random()
        let plain = fullRecord(sequence: 1, parentID: "p", xattrs: Data([1]))
        let sealed = [fullRecord(sequence: 2, parentID: "p", xattrs: Data([2])), bareRecord(sequence: 3)]
        let sealedFrames = try sealed.map { try $0.framed(sealedWith: key) }
        let journal = try plain.framed() + sealedFrames.flatMap { $0 }
        #expect(sealedFrames.allSatisfy { Array($0.prefix(4)) == Array("DDJ2".utf8) })
        let name = Data(try #require(sealed[0].newNode).name.utf8), plainName = Data(try #require(plain.newNode).name.utf8)
        let plainFrame = Data(try plain.framed())
        #expect(Data(sealedFrames[0]).range(of: name) == nil && plainFrame.range(of: plainName) != nil,
                "the name is sealed (and in the clear in a plain frame)")
        #expect(DriveCommitRecord.records(in: journal, key: key).records == [plain] + sealed)
        #expect(DriveCommitRecord.records(in: journal, key: key).length == journal.count)
        #expect(DriveCommitRecord.records(in: journal).records == [plain], "without the key: stops at the first sealed frame")
        #expect(DriveCommitRecord.records(in: journal, key: SymmetricKey.random()).records == [plain])
    }

    /// A daemon killed while appending leaves part of a frame: whatever part, the records before it are read
    /// and the torn one is not.
    @Test func aTornLastFrameIsNotRead() throws {
        let records = [bareRecord(sequence: 1), fullRecord(sequence: 2, parentID: "p", xattrs: Data([9, 9])),
                       fullRecord(sequence: 3, parentID: nil, xattrs: Data(repeating: 3, count: 100))]
        let frames = try records.map { try $0.framed() }
        let intact = frames[0].count + frames[1].count
        let journal = frames.flatMap { $0 }
        for cut in intact..<journal.count {
            let read = DriveCommitRecord.records(in: Array(journal[..<cut]))
            #expect(read.records == Array(records[..<2]), "cut at \(cut)")
            #expect(read.length == intact, "cut at \(cut)")
        }
        #expect(DriveCommitRecord.records(in: journal).records == records)
    }

    /// An `unlink` journaled is a removal record (`DDR1`: sequence, node, folder if any, name, time), read
    /// back in order among commits; sealed (`DDR2`) its name is not in the bytes; a removal frame whose payload
    /// has a byte too many or too few stops reading there.
    @Test func aRemovalIsItsOwnFrameAmongCommits() throws {
        let removal = DriveCommitRecord.removal(sequence: 2, nodeID: "n9", parentID: "dir", name: "gone.txt", time: 3.5)
        var payload = Encoder()
        payload.u64(2)
        payload.string("n9")
        payload.bytes.append(1); payload.string("dir")
        payload.string("gone.txt")
        payload.f64(3.5)
        let expected = frame(payload.bytes, magic: "DDR1")
        #expect(try removal.framed() == expected)
        let atTop = DriveCommitRecord.removal(sequence: 3, nodeID: "n10", parentID: nil, name: "é", time: 0)
        let journal = (try bareRecord(sequence: 1).framed()) + expected + (try atTop.framed()) + (try bareRecord(sequence: 4).framed())
        let read = DriveCommitRecord.records(in: journal)
        #expect(read.records == [bareRecord(sequence: 1), removal, atTop, bareRecord(sequence: 4)])
        #expect(read.length == journal.count)
        #expect(read.records[1].name! == (parentID: "dir", name: "gone.txt"))
        #expect(read.records[2].removal == .init(parentID: nil, name: "é"))

        let key = SymmetricKey.random()
        let sealed = try removal.framed(sealedWith: key)
        #expect(Array(sealed.prefix(4)) == Array("DDR2".utf8))
        #expect(Data(sealed).range(of: Data("gone.txt".utf8)) == nil)
        #expect(DriveCommitRecord.records(in: sealed, key: key).records == [removal])
        #expect(DriveCommitRecord.records(in: sealed).records.isEmpty, "without the key")

        for bad in [payload.bytes + [0], Array(payload.bytes.dropLast())] {
            let read = DriveCommitRecord.records(in: (try bareRecord(sequence: 1).framed()) + frame(bad, magic: "DDR1"))
            #expect(read.records == [bareRecord(sequence: 1)])
        }
    }

    /// A flipped bit anywhere in a frame (its magic, length, CRC or payload) stops reading before it, even
    /// though a good frame follows.
    @Test func aDamagedFrameStopsReading() throws {
        let records = [bareRecord(sequence: 1), fullRecord(sequence: 2, parentID: "p", xattrs: Data([1, 2, 3])), bareRecord(sequence: 3)]
        let frames = try records.map { try $0.framed() }
        let journal = frames.flatMap { $0 }
        let second = frames[0].count..<(frames[0].count + frames[1].count)
        for position in second {
            for bit in 0..<8 {
                var damaged = journal
                damaged[position] ^= 1 << bit
                let read = DriveCommitRecord.records(in: damaged)
                #expect(read.records == [records[0]], "bit \(bit) of byte \(position - second.lowerBound) of the second frame")
                #expect(read.length == frames[0].count, "bit \(bit) of byte \(position - second.lowerBound) of the second frame")
            }
        }
        let foreign = DriveCommitRecord.records(in: Array("DDJ2".utf8) + Array(frames[0].dropFirst(4)))
        #expect(foreign.records.isEmpty)
        #expect(foreign.length == 0)
    }

    /// A frame longer than 1 MiB is not a record, even whole and with a good CRC; one of exactly 1 MiB is.
    @Test func aFrameOverOneMebibyteIsRejected() throws {
        let first = bareRecord(sequence: 1), last = bareRecord(sequence: 4)
        let overhead = encode(fullRecord(sequence: 2, parentID: nil, xattrs: Data())).count
        let atLimit = fullRecord(sequence: 2, parentID: nil, xattrs: Data(repeating: 0x5A, count: (1 << 20) - overhead))
        let overLimit = fullRecord(sequence: 3, parentID: nil, xattrs: Data(repeating: 0x5A, count: (1 << 20) - overhead + 1))
        #expect(encode(atLimit).count == 1 << 20)
        #expect(encode(overLimit).count == (1 << 20) + 1)

        let accepted = (try first.framed()) + frame(encode(atLimit)) + (try last.framed())
        #expect(DriveCommitRecord.records(in: accepted).records == [first, atLimit, last])

        let oversized = frame(encode(overLimit))
        #expect(oversized.count == 12 + (1 << 20) + 1)
        let read = DriveCommitRecord.records(in: (try first.framed()) + oversized + (try last.framed()))
        #expect(read.records == [first])
        #expect(read.length == (try first.framed()).count)
    }

    /// An optional's flag is 0 or 1: any other byte, in a frame whose CRC checks out, makes the record
    /// malformed and reading stops there.
    @Test func anOptionalFlagOtherThanZeroOrOneIsMalformed() throws {
        let first = bareRecord(sequence: 1)
        var encoder = Encoder()
        encoder.record(fullRecord(sequence: 2, parentID: "p", xattrs: Data([7])))
        #expect(encoder.flags.count == 7, "mode, modified, newNode, parentID, mtime, target, xattrs")
        for flag in encoder.flags {
            for value: UInt8 in [2, 0xFF] {
                var payload = encoder.bytes
                #expect(payload[flag] == 1)
                payload[flag] = value
                let read = DriveCommitRecord.records(in: (try first.framed()) + frame(payload) + (try bareRecord(sequence: 3).framed()))
                #expect(read.records == [first], "flag at \(flag) set to \(value)")
                #expect(read.length == (try first.framed()).count, "flag at \(flag) set to \(value)")
            }
        }
    }

    /// A version's cloud file ID goes last, and only when present: a record without it is byte for byte the
    /// record before it existed (so journals written before read as they were), one with it reads back with
    /// it, and an absent flag in its place is a byte too many.
    @Test func theVersionsFileIDIsWrittenLastAndOnlyWhenPresent() throws {
        var record = bareRecord(sequence: 4)
        let without = encode(record)
        record.cloudFileID = Data((0..<16).map { UInt8($0) })
        let with = try record.framed()
        #expect(Array(with.dropFirst(12)) == without + [1, 16, 0, 0, 0] + Array(0..<16), "flag, length, the 16 bytes")
        #expect(with == frame(encode(record)))
        #expect(DriveCommitRecord.records(in: with).records == [record])
        #expect(DriveCommitRecord.records(in: frame(without + [0])).records.isEmpty)
    }

    /// A payload is read to its last byte: one byte more, in a frame whose length and CRC count it, is
    /// malformed.
    @Test func aPayloadWithTrailingBytesIsMalformed() throws {
        let first = bareRecord(sequence: 1)
        for record in [bareRecord(sequence: 2), fullRecord(sequence: 2, parentID: "p", xattrs: Data([1]))] {
            let whole = DriveCommitRecord.records(in: (try first.framed()) + frame(encode(record)))
            #expect(whole.records == [first, record], "the payload without the extra byte is good")
            let read = DriveCommitRecord.records(in: (try first.framed()) + frame(encode(record) + [0]) + (try bareRecord(sequence: 3).framed()))
            #expect(read.records == [first])
            #expect(read.length == (try first.framed()).count)
        }
    }
}

// MARK: - Records

private func bareRecord(sequence: UInt64) -> DriveCommitRecord {
    DriveCommitRecord(sequence: sequence, nodeID: "node-\(sequence)", fileName: "file-\(sequence)", format: 1,
                      fileWrappedKey: Data(repeating: UInt8(truncatingIfNeeded: sequence), count: 40), storedSize: 4096,
                      plaintextSize: 4000, time: 1_700_000_000.25, mode: nil, modified: nil, newNode: nil)
}

private func fullRecord(sequence: UInt64, parentID: String?, xattrs: Data?) -> DriveCommitRecord {
    DriveCommitRecord(sequence: sequence, nodeID: "node-café ✓-\(sequence)", fileName: "file-\(sequence)", format: 3,
                      fileWrappedKey: Data((0..<40).map { UInt8($0) }), storedSize: 1 << 40, plaintextSize: (1 << 40) - 17,
                      time: 1_700_000_123.5, mode: 0o755, modified: .init(seconds: 1_699_999_999, nanoseconds: 999_999_999),
                      newNode: .init(wrappedKey: Data(repeating: 0xC3, count: 40), name: "café ✓ \(sequence)", parentID: parentID,
                                     created: 1_600_000_000.125, type: "file", mode: 0o600, mtime: -5, mtimeNsec: 123,
                                     target: "../ziel ✓", xattrs: xattrs))
}

/// The record of `theFrameIsTheDocumentedFormat`, whose payload is spelled out there.
private func fixtureRecord() -> DriveCommitRecord {
    DriveCommitRecord(sequence: 7, nodeID: "n1", fileName: "f", format: 2, fileWrappedKey: Data([0xAA, 0xBB]), storedSize: 100,
                      plaintextSize: 90, time: 1.5, mode: 0o644, modified: .init(seconds: 10, nanoseconds: 20),
                      newNode: .init(wrappedKey: Data([1, 2, 3]), name: "café", parentID: "p", created: 2.25, type: "file",
                                     mode: 420, mtime: nil, mtimeNsec: 5, target: nil, xattrs: Data()))
}

// MARK: - The format, written from its description

/// The payload of `record` as the format describes it.
private func encode(_ record: DriveCommitRecord) -> [UInt8] {
    var encoder = Encoder()
    encoder.record(record)
    return encoder.bytes
}

/// `payload` framed: magic, length, CRC-32 (little-endian), payload.
private func frame(_ payload: [UInt8], magic: String = "DDJ1") -> [UInt8] {
    var header = Encoder()
    header.bytes = Array(magic.utf8)
    header.u32(UInt32(payload.count))
    header.u32(crc32(payload))
    return header.bytes + payload
}

private struct Encoder {
    var bytes: [UInt8] = []
    /// Where each optional's flag byte is, in order.
    var flags: [Int] = []

    mutating func u32(_ value: UInt32) { for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) } }
    mutating func u64(_ value: UInt64) { for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) } }
    mutating func i64(_ value: Int64) { u64(UInt64(bitPattern: value)) }
    mutating func f64(_ value: Double) { u64(value.bitPattern) }
    mutating func data(_ value: Data) { u32(UInt32(value.count)); bytes += value }
    mutating func string(_ value: String) { data(Data(value.utf8)) }
    mutating func optional<T>(_ value: T?, _ write: (inout Encoder, T) -> Void) {
        flags.append(bytes.count)
        bytes.append(value == nil ? 0 : 1)
        if let value { write(&self, value) }
    }

    mutating func record(_ record: DriveCommitRecord) {
        u64(record.sequence)
        string(record.nodeID)
        string(record.fileName)
        bytes.append(record.format)
        data(record.fileWrappedKey)
        i64(record.storedSize)
        i64(record.plaintextSize)
        f64(record.time)
        optional(record.mode) { $0.i64($1) }
        optional(record.modified) { $0.i64($1.seconds); $0.i64($1.nanoseconds) }
        optional(record.newNode) { encoder, node in
            encoder.data(node.wrappedKey)
            encoder.string(node.name)
            encoder.optional(node.parentID) { $0.string($1) }
            encoder.f64(node.created)
            encoder.string(node.type)
            encoder.i64(node.mode)
            encoder.optional(node.mtime) { $0.i64($1) }
            encoder.i64(node.mtimeNsec)
            encoder.optional(node.target) { $0.string($1) }
            encoder.optional(node.xattrs) { $0.data($1) }
        }
        if let cloudFileID = record.cloudFileID { optional(cloudFileID) { $0.data($1) } }
    }
}

/// CRC-32 as zlib computes it (reflected polynomial 0xEDB88320, initial and final XOR 0xFFFFFFFF).
private let crcTable: [UInt32] = (0..<256).map { (index: UInt32) -> UInt32 in
    var crc = index
    for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    return crc
}

private func crc32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes { crc = crcTable[Int(UInt8(truncatingIfNeeded: crc) ^ byte)] ^ (crc >> 8) }
    return crc ^ 0xFFFF_FFFF
}
