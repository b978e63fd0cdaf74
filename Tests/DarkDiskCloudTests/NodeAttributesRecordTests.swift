import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import Foundation
import Testing

/// A node's record carries what the drive shows besides its content (type, mode, modification
/// time to the nanosecond, a link's target, `user.*` extended attributes), sealed like the rest of it
/// (Docs/FORMAT.md). Records without them read as files with the defaults; malformed ones are refused.
@Suite struct NodeAttributesRecordTests {
    static let key = Hex.encode([UInt8](repeating: 7, count: 60))

    /// A sealed record's plaintext as FORMAT.md documents it, with `extra` keys added.
    static func json(_ extra: String) -> String {
        #"{"cloudETag":"\"e\"","dataSize":3,"generation":1,"metadataSize":0,"name":"x","nodeID":"n","thumbnailSize":0,"version":2,"wrappedKey":"\#(key)""#
            + (extra.isEmpty ? "" : "," + extra) + "}"
    }

    static func open(_ json: String, on manager: DiskManager) throws(RemoteError) -> NodeRecord {
        let sealed: [UInt8]
        do {
            sealed = try manager.keys.sealRecord(Array(json.utf8), context: Array("darkdisk node record 2\u{0}n".utf8))
        } catch {
            throw RemoteError(.io, "cannot seal: \(error)")
        }
        // A version 2 record, as stores wrote them before keyed names: under the node's ID.
        guard let record = try RecordObject.read(Data(sealed), key: "records/n.rec", with: manager).object.record else {
            throw RemoteError(.invalidResponse, "not a record")
        }
        return record
    }

    @Test func documentedFieldsReadAsAttributesAndMalformedOnesAreRefused() throws {
        let setup = try CloudTests.Setup()
        // Without the fields: a file, 0644, of unknown time, no link, no attributes.
        #expect(try Self.open(Self.json(""), on: setup.a).attributes == NodeAttributes())
        #expect(try Self.open(Self.json(""), on: setup.a).attributes?.mode == 0o644)
        let link = try Self.open(Self.json(#""type":"symlink","target":"..\/x y","mode":511,"mtime":-5,"mtimeNsec":999999999"#), on: setup.a)
        #expect(link.attributes == NodeAttributes(kind: .symlink, mode: 0o777, modifiedSeconds: -5, modifiedNanoseconds: 999_999_999, target: "../x y"))
        let folder = try Self.open(Self.json(#""type":"folder","xattrs":{"user.a":"AAEC"}"#), on: setup.a)
        #expect(folder.attributes == NodeAttributes(kind: .folder, mode: 0o755, extendedAttributes: ["user.a": [0, 1, 2]]))

        let large = Data(repeating: 1, count: 65_536).base64EncodedString()
        for (extra, problem) in [(#""type":"device""#, "unknown type 'device'"),
                                 (#""mode":4096"#, "mode 10000 has bits beyond 7777"),
                                 (#""mtime":1,"mtimeNsec":1000000000"#, "modification time has 1000000000 nanoseconds"),
                                 (#""type":"symlink""#, "a symbolic link without a target"),
                                 (#""target":"\/etc\/passwd""#, "a file with a link target"),
                                 (#""type":"symlink","target":"a\u0000b""#, "a symbolic link target that is empty, longer than 4095 bytes or holds a NUL"),
                                 (#""xattrs":{"trusted.x":"AA=="}"#, "extended attribute 'trusted.x' is not a user.* name of at most 255 bytes"),
                                 (#""xattrs":{"user.x":"not base64!"}"#, "an extended attribute that is not base64"),
                                 (#""xattrs":{"user.big":"\#(large)"}"#, "extended attributes of 65544 bytes (at most 65536)")] {
            #expect(throws: RemoteError(.invalidResponse, "the record of node 'n' has malformed attributes (\(problem))"), "\(extra)") {
                _ = try Self.open(Self.json(extra), on: setup.a)
            }
        }
    }

    /// What the index knows of a node's attributes goes into the record a push writes, and a pull on another
    /// store brings them back exactly (nanoseconds, bytes of attribute values included).
    @Test func aPushCarriesTheNodesAttributesToAnotherStore() async throws {
        let setup = try CloudTests.Setup()
        let syncA = CloudSync(manager: setup.a, remote: setup.remote)
        let id = try NodeID("attributed")
        let attributes = NodeAttributes(kind: .file, mode: 0o600, modifiedSeconds: 1_700_000_123, modifiedNanoseconds: 456_789_012,
                                        extendedAttributes: ["user.comment": Array("secret note".utf8), "user.bin": [0, 255, 10]])
        try await syncA.push(dataFile: setup.file("v1", Data("content".utf8)), nodeID: id, name: "n.txt")
        var entry = try #require(try await setup.a.outline.entry(id))
        entry.attributes = attributes
        try await setup.a.outline.update(entry, invalidatingLocalFiles: false)
        #expect(try await setup.a.outline.attributes(of: id) == attributes)
        try await syncA.push(dataFile: setup.file("v2", Data("content 2".utf8)), nodeID: id, name: "n.txt")

        // Sealed: the bucket holds neither an attribute's name nor its value.
        let record = try #require(try await setup.remote.readAll(CloudLayout.record(id, with: setup.a)))
        for needle in ["secret note", "user.comment", "mtime"] { #expect(record.range(of: Data(needle.utf8)) == nil) }
        let pulled = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        #expect(pulled.added == 1)
        #expect(try await setup.b.outline.entry(id)?.attributes == attributes)
        #expect(try await setup.b.outline.attributes(of: id) == attributes)
    }
}
