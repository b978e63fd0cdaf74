import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Private, authenticated records. The bucket holds nothing about a node but its ID and
/// the sizes of its objects; a record swapped with another node's, altered or replayed is refused with one
/// line, and the node keeps what the store had; the legacy JSON layout keeps reading.
@Suite struct SealedRecordTests {
    /// Every byte of every object in the bucket, for grep-like checks.
    private func bucketBytes(_ setup: CloudTests.Setup) throws -> [(String, Data)] {
        let root = setup.directory + "/remote"
        let files = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
        return try files.compactMap { name in
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root + "/" + name, isDirectory: &isDirectory), !isDirectory.boolValue else { return nil }
            return (name, try Data(contentsOf: URL(fileURLWithPath: root + "/" + name)))
        }
    }

    @Test func theBucketHoldsNoNameAndRefusesSwapsAlterationsAndRollbacks() async throws {
        let setup = try CloudTests.Setup()
        let syncA = CloudSync(manager: setup.a, remote: setup.remote)
        let syncB = CloudSync(manager: setup.b, remote: setup.remote)
        let secret = try NodeID("n1"), other = try NodeID("n2")
        let name = "tax return 2026 (final).pdf"
        try await syncA.push(dataFile: setup.file("v1", Data("first version".utf8)), nodeID: secret, name: name, parentID: "folder7")
        try await syncA.push(dataFile: setup.file("o1", Data("another node".utf8)), nodeID: other, name: "holiday.jpg")

        // grep -r of the bucket finds neither name, nor the parent, nor any field name of a record.
        for (object, bytes) in try bucketBytes(setup) {
            for needle in [name, "tax return", "holiday", "folder7", "parentID", "wrappedKey", "cloudETag"] {
                #expect(bytes.range(of: Data(needle.utf8)) == nil, "\(object) holds '\(needle)'")
            }
        }
        let sealedInfo = try await setup.remote.info(CloudLayout.record(secret, with: setup.a))
        let legacyInfo = try await setup.remote.info(CloudLayout.legacyRecord(secret))
        #expect(sealedInfo != nil && legacyInfo == nil, "a push writes the sealed record only")
        var pulled = try await syncB.pull()
        #expect(pulled.added == 2 && pulled.skipped.isEmpty)
        let entry = try #require(try await setup.b.outline.entry(secret))
        #expect(entry.name == name && entry.parentID == "folder7", "B reads what A sealed")
        #expect(try await setup.b.records.generation(of: secret) == 1)

        // Swapped: each record under the other's name. Both refused; B keeps both nodes as it knew them.
        let secretRecord = try #require(try await setup.remote.readAll(CloudLayout.record(secret, with: setup.a)))
        let otherRecord = try #require(try await setup.remote.readAll(CloudLayout.record(other, with: setup.a)))
        _ = try await setup.remote.write(CloudLayout.record(secret, with: setup.a), data: otherRecord)
        _ = try await setup.remote.write(CloudLayout.record(other, with: setup.a), data: secretRecord)
        pulled = try await syncB.pull()
        #expect(pulled.skipped.count == 2 && pulled.skipped.allSatisfy { $0.contains("does not authenticate") }, "\(pulled.skipped)")
        #expect(try await setup.b.outline.entry(secret) == entry)
        #expect(try await setup.b.outline.entry(other)?.name == "holiday.jpg")

        // Altered: one byte flipped anywhere (here, in the middle) is refused the same way.
        var altered = secretRecord
        altered[altered.count / 2] ^= 0x01
        _ = try await setup.remote.write(CloudLayout.record(secret, with: setup.a), data: altered)
        _ = try await setup.remote.write(CloudLayout.record(other, with: setup.a), data: otherRecord)
        pulled = try await syncB.pull()
        #expect(pulled.skipped == ["the record of node 'n1' does not authenticate (altered, moved from another node, or sealed under another key)"])
        #expect(try await setup.b.outline.entry(secret) == entry)

        // Replayed: A writes generation 2, B applies it; the old record put back is a rollback, refused.
        _ = try await setup.remote.write(CloudLayout.record(secret, with: setup.a), data: secretRecord)
        try await syncA.push(dataFile: setup.file("v2", Data("second version".utf8)), nodeID: secret, name: name, parentID: "folder7")
        pulled = try await syncB.pull()
        #expect(pulled.changed == 1 && pulled.skipped.isEmpty)
        let second = try #require(try await setup.b.outline.entry(secret))
        let generation = try await setup.b.records.generation(of: secret)
        #expect(second.cloudETag != entry.cloudETag && generation == 2)
        _ = try await setup.remote.write(CloudLayout.record(secret, with: setup.a), data: secretRecord)
        pulled = try await syncB.pull()
        #expect(pulled.skipped == ["the record of node 'n1' is older (generation 1) than the one this store has applied (generation 2): a rollback, refused"],
                "\(pulled.skipped)")
        #expect(try await setup.b.outline.entry(secret) == second, "a rollback is never applied")

        // An unsealed record in its place is refused too (anyone could have written it).
        try await setup.remote.delete(CloudLayout.record(secret, with: setup.a))
        var legacy = try NodeRecord.open(secretRecord, expected: secret, with: setup.a)
        legacy.version = 1
        legacy.generation = nil
        _ = try await setup.remote.write(CloudLayout.legacyRecord(secret), data: legacy.encoded())
        pulled = try await syncB.pull()
        #expect(pulled.skipped.count == 1 && pulled.skipped[0].contains("is unsealed (plain JSON"), "\(pulled.skipped)")
        #expect(try await setup.b.outline.entry(secret) == second)

        // Deleted from the bucket by its writer (no tombstone): refused too, the node is kept.
        try await setup.remote.delete(CloudLayout.legacyRecord(secret))
        pulled = try await syncB.pull()
        #expect(pulled.deleted == 0 && pulled.skipped.count == 1 && pulled.skipped[0].contains("without a tombstone"), "\(pulled)")
        #expect(try await setup.b.outline.entry(secret) == second)

        // Deleted with a tombstone (what a delete writes), then replayed: the store remembers the generation.
        _ = try await setup.remote.write(CloudLayout.record(secret, with: setup.a), data: try NodeTombstone(nodeID: secret, generation: 3, deletedAt: Date()).sealed(with: setup.a))
        pulled = try await syncB.pull()
        #expect(pulled.deleted == 1 && pulled.skipped.isEmpty, "\(pulled)")
        #expect(try await setup.b.outline.entry(secret) == nil)
        _ = try await setup.remote.write(CloudLayout.record(secret, with: setup.a), data: secretRecord)
        pulled = try await syncB.pull()
        #expect(pulled.skipped.count == 1 && pulled.skipped[0].contains("rollback"), "\(pulled.skipped)")
        #expect(try await setup.b.outline.entry(secret) == nil, "a replay after a delete is a rollback too")
    }

    /// A pull that read a node's record just before this store wrote a newer one (a mount's uploads landing
    /// while its own poll runs: one after the pull read what the store knew, one after it read the record)
    /// does not apply what it read: the node keeps the version this store pushed last.
    @Test func aPullNeverAppliesARecordOlderThanOneThisStoreWroteMeanwhile() async throws {
        let setup = try CloudTests.Setup()
        let id = try NodeID("n1")
        let (store, remote) = (setup.a, setup.remote)
        try await CloudSync(manager: store, remote: remote).push(dataFile: setup.file("v1", Data("one\n".utf8)), nodeID: id)
        let (second, third) = (try setup.file("v2", Data("one\ntwo\n".utf8)), try setup.file("v3", Data("one\ntwo\nthree\n".utf8)))
        let racing = InterceptingRemote(remote, afterFirstList: {
            try await CloudSync(manager: store, remote: remote).push(dataFile: second, nodeID: id)
        }, afterFirstRecordRead: {
            try await CloudSync(manager: store, remote: remote).push(dataFile: third, nodeID: id)
        })
        let pulled = try await CloudSync(manager: store, remote: racing).pull()
        #expect(racing.recordWasRead && pulled.skipped.isEmpty, "\(pulled)")
        let entry = try #require(try await store.outline.entry(id))
        let generation = try await store.records.generation(of: id)
        #expect(entry.dataSize == 14 && generation == 3, "rolled back to \(entry.dataSize) bytes")
        let export = try await DownloadManager(manager: store, remote: remote).nodeData(id)
        #expect(try CloudTests().plaintext(export) == Data("one\ntwo\nthree\n".utf8))
    }

    /// A bucket written by an older darkdisk (plain JSON records) keeps reading: pull, fetch; the next push
    /// of a node replaces its legacy record by a sealed one.
    /// A record's size tells nothing of its name or attributes: records of names of 1 and 255 bytes, a
    /// folder, and a tombstone are all one size (1 KiB of padded JSON, sealed); a record of many attributes
    /// is padded too, to a size with few significant bits.
    @Test func recordsArePaddedToSizesThatHideTheirNames() async throws {
        let setup = try CloudTests.Setup()
        let sync = CloudSync(manager: setup.a, remote: setup.remote)
        try await sync.push(dataFile: setup.file("s", Data("x".utf8)), nodeID: NodeID("short"), name: "a")
        try await sync.push(dataFile: setup.file("l", Data("x".utf8)), nodeID: NodeID("long"), name: String(repeating: "é", count: 127) + "b")
        try await sync.push(dataFile: setup.file("g", Data("x".utf8)), nodeID: NodeID("gone"), name: "gone.txt")
        try await sync.deleteNode(NodeID("gone"))
        var sizes: Set<UInt64> = []
        for id in ["short", "long", "gone"] {
            sizes.insert(try #require(try await setup.remote.info(CloudLayout.record(NodeID(id), with: setup.a))).size)
        }
        #expect(sizes.count == 1, "\(sizes)")
        for length in [1, 1024, 1025, 1500, 5000, 70_000] {
            let padded = RecordPadding.size(for: length)
            #expect(padded >= max(length, 1024) && Double(padded) <= max(1024, Double(length) * 1.12), "\(length) → \(padded)")
        }
        #expect(RecordPadding.size(for: 5000) == RecordPadding.size(for: 5100))
    }

    /// A version 2 record (sealed, written before records named their cloud file's ID) is bound to the file
    /// ID of the header a store finds when it first pulls it, and the next write makes it version 4: an
    /// older version put in the current one's place afterwards (same size, same ETag) is refused.
    @Test func aRecordWithoutAFileIDIsBoundWhenFirstPulled() async throws {
        let setup = try CloudTests.Setup()
        let node = try NodeID("bound")
        let syncA = CloudSync(manager: setup.a, remote: setup.remote)
        try await syncA.push(dataFile: setup.file("v1", Data("version one!".utf8)), nodeID: node, name: "v.txt")
        let first = try #require(try await setup.a.outline.entry(node))
        let olderKey = CloudLayout.cloudFile(of: first, with: setup.a)
        let older = try #require(try await setup.remote.readAll(olderKey))
        try await syncA.push(dataFile: setup.file("v2", Data("version two!".utf8)), nodeID: node, name: "v.txt")
        let second = try #require(try await setup.a.outline.entry(node))
        #expect(second.cloudFileID != nil && second.cloudFileID != first.cloudFileID, "each version has its own file ID")

        // The record as an older darkdisk wrote it: version 2, no file ID, under the node's ID.
        let record = try await setup.nameByID(node, version: 2)
        #expect(record.fileID == nil)
        let pulled = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        #expect(pulled.added == 1 && pulled.skipped.isEmpty, "\(pulled)")
        #expect(try await setup.b.outline.entry(node)?.cloudFileID == second.cloudFileID, "bound to the header it found")

        // The older version written in place, its time put back: the ETag the remote reports stays.
        let path = setup.directory + "/remote/" + CloudLayout.cloudFile(node, version: second.cloudVersion, keyed: false, with: setup.a)
        try #require(try overwriteKeepingTimes(path, with: older))
        do {
            _ = try await DownloadManager(manager: setup.b, remote: setup.remote).nodeData(node)
            Issue.record("the older version was served")
        } catch {
            #expect("\(error)".contains("not the version its record names"), "\(error)")
        }
    }

    /// One record whose key does not unwrap as its node's (here: another node's key, in a record sealed
    /// under the right key) is refused alone; the rest of the pull, another machine's new file, arrives.
    /// Before, it failed the whole pull ("a key in the index does not unwrap"), nothing applied.
    @Test func aRecordWhoseKeyDoesNotUnwrapIsSkippedAndTheRestPulled() async throws {
        let setup = try CloudTests.Setup()
        let syncA = CloudSync(manager: setup.a, remote: setup.remote)
        let bad = try NodeID("bad"), good = try NodeID("good")
        try await syncA.push(dataFile: setup.file("bad-data", Data("bad".utf8)), nodeID: bad, name: "bad.txt")
        try await syncA.push(dataFile: setup.file("good-data", Data("good".utf8)), nodeID: good, name: "good.txt")
        var record = try NodeRecord.open(try #require(try await setup.remote.readAll(CloudLayout.record(bad, with: setup.a))), expected: bad, with: setup.a)
        record.wrappedKey = Hex.encode(setup.a.keys.wrap(SymmetricKey.random(), for: .node(good)))
        record.generation = (record.generation ?? 0) + 1
        _ = try await setup.remote.write(CloudLayout.record(bad, with: setup.a), data: try record.sealed(with: setup.a))

        let pulled = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        #expect(pulled.added == 1 && pulled.skipped.count == 1 && pulled.skipped[0].contains("node 'bad'"), "\(pulled)")
        #expect(try await setup.b.outline.entry(good)?.name == "good.txt")
        #expect(try await setup.b.outline.entry(bad) == nil)
    }

    /// The bucket cannot inject entries: unsealed (plain JSON) records, such as anyone with access to the
    /// bucket can write, are refused, one line each, whatever they claim to be (a folder, a set-uid file with
    /// an attribute, a link to /etc/shadow inside a real folder) and whichever key they carry (here one
    /// this store's master key really wrapped). A store that has a node seals it again with a push.
    @Test func unsealedRecordsAreRefusedAndAPushSealsThem() async throws {
        let setup = try CloudTests.Setup()
        let syncA = CloudSync(manager: setup.a, remote: setup.remote)
        let folder = try NodeID("real-folder"), node = try NodeID("old")
        try await syncA.push(dataFile: setup.file("f", Data("a real node".utf8)), nodeID: folder, name: "docs")
        let data = CloudTests.bytes(100_000, seed: 91)
        try await syncA.push(dataFile: setup.file("old", data), nodeID: node, name: "old.bin")
        let wrapped = Hex.encode(setup.a.keys.wrap(SymmetricKey.random(), for: .avatar(try UserID("u"), try IdentityID("i"))))
        let forged: [(String, [String: Any])] = [
            ("forged-folder", ["type": "folder", "name": "inbox"]),
            ("forged-suid", ["type": "file", "name": "run-me", "mode": 0o6777, "parentID": folder.rawValue,
                             "xattrs": ["user.x": Data("1".utf8).base64EncodedString()]]),
            ("forged-link", ["type": "symlink", "name": "open-me", "target": "/etc/shadow", "parentID": folder.rawValue]),
        ]
        for (id, fields) in forged {
            var json: [String: Any] = ["version": 1, "nodeID": id, "metadataSize": 0, "thumbnailSize": 0, "dataSize": 0,
                                       "wrappedKey": wrapped, "cloudETag": "\"x\""]
            json.merge(fields) { $1 }
            _ = try await setup.remote.write(CloudLayout.legacyRecord(NodeID(id)), data: try JSONSerialization.data(withJSONObject: json))
        }
        // The node's own record, turned into the old plain layout by the bucket: refused too.
        var record = try NodeRecord.open(try #require(try await setup.remote.readAll(CloudLayout.record(node, with: setup.a))), expected: node, with: setup.a)
        record.version = 1
        record.generation = nil
        try await setup.remote.delete(CloudLayout.record(node, with: setup.a))
        _ = try await setup.remote.write(CloudLayout.legacyRecord(node), data: record.encoded())

        let pulled = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        #expect(pulled.added == 1 && pulled.skipped.count == 4, "\(pulled)")
        #expect(pulled.skipped.allSatisfy { $0.contains("is unsealed (plain JSON") }, "\(pulled.skipped)")
        #expect(try await setup.b.outline.entries().map(\.nodeID) == [folder], "only the sealed folder")

        // A's push seals the node again (and removes the plain one); B then reads it.
        try await syncA.push(dataFile: setup.file("again", data), nodeID: node, name: "old.bin")
        #expect(try await setup.remote.info(CloudLayout.legacyRecord(node)) == nil, "the unsealed record went")
        #expect(try await CloudSync(manager: setup.b, remote: setup.remote).pull().added == 1)
        let export = try await DownloadManager(manager: setup.b, remote: setup.remote).nodeData(node)
        let reader = try export.reader()
        #expect(Data(try reader.read(section: reader.dataSection, offset: 0, count: data.count)) == data)
    }
}
