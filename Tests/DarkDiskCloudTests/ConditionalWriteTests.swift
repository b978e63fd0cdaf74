import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// Conditional writes: a record is created only if absent and replaced only if it is still the
/// one a change was based on, on `file://` (lock and compare) and on S3 (moto's server); a push that loses
/// the race keeps the remote's version on the node and uploads the local change as a conflict copy.
@Suite(.ownThreads) struct ConditionalWriteTests {
    /// The remotes the tests here run on: `file://`, moto's S3, and Ceph's RADOS Gateway when
    /// `DARKDISK_TEST_RGW` is set (`Scripts/test --long`): in the full suite on two cores a cluster once
    /// failed to start within two minutes, so the suite leaves it out.
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case file, s3, rgw
        var testDescription: String { rawValue }

        static var allCases: [Kind] {
            ProcessInfo.processInfo.environment["DARKDISK_TEST_RGW"] == nil ? [.file, .s3] : [.file, .s3, .rgw]
        }
    }

    /// Two stores sharing a key and a remote of `kind` (its server stays up while the value lives).
    struct Bucket {
        let setup: CloudTests.Setup
        let remote: any Remote
        let server: AnyObject?

        init(_ kind: Kind) async throws {
            setup = try CloudTests.Setup()
            switch kind {
            case .file:
                remote = setup.remote
                server = nil
            case .s3:
                let moto = try MotoServer()
                remote = try await moto.remote(prefix: "shared", credentials: MotoServer.anyCredentials)
                server = moto
            case .rgw:
                let ceph = try CephServer()
                remote = try await ceph.remote(prefix: "shared")
                server = ceph
            }
        }

        func sync(_ manager: DiskManager, host: String = "machine-b") -> CloudSync {
            CloudSync(manager: manager, remote: remote, host: host)
        }

        /// The node's plaintext as a third reader of the bucket sees it (a pull into a fresh read of store A's).
        func content(_ id: NodeID, on manager: DiskManager) async throws -> Data {
            let downloads = DownloadManager(manager: manager, remote: remote)
            return try CloudTests().plaintext(try await downloads.nodeData(id))
        }
    }

    /// A change committed here while an older one uploads is made on what this store had, not on what the
    /// remote got meanwhile: when the older one meets another machine's version and becomes a conflict copy
    /// (the node taking the remote's version), the newer one is a conflict copy too. It used to be uploaded
    /// over the other machine's version as if made on it, which then lived only in older cloud files.
    @Test func aChangeMadeWhileAConflictingOneUploadsIsAConflictToo() async throws {
        let bucket = try await Bucket(.file)
        let (a, b, id) = (bucket.setup.a, bucket.setup.b, try NodeID("doc"))
        try await bucket.sync(a, host: "machine-a").push(dataFile: bucket.setup.file("v0", Data("v0".utf8)), nodeID: id, name: "doc.txt")
        _ = try await bucket.sync(b).pull()
        // A's first edit waits in its queue; B's edit lands first.
        try await bucket.sync(a, host: "machine-a").queuePush(dataFile: bucket.setup.file("a1", Data("a1".utf8)), nodeID: id)
        try await bucket.sync(b).push(dataFile: bucket.setup.file("b1", Data("b1".utf8)), nodeID: id)
        // A's second edit is committed while its first uploads.
        let (second, remote) = (try bucket.setup.file("a2", Data("a2".utf8)), bucket.remote)
        let racing = InterceptingRemote(remote, beforeFirstFileWrite: {
            try await CloudSync(manager: a, remote: remote, host: "machine-a").queuePush(dataFile: second, nodeID: id)
        })
        let first = try await CloudSync(manager: a, remote: racing, host: "machine-a").drainQueue()
        let waiting = try await a.uploadQueue.all()
        #expect(first.conflicts.count == 1 && waiting.count == 1, "\(first)")
        let then = try await bucket.sync(a, host: "machine-a").drainQueue()
        #expect(then.conflicts.count == 1 && then.uploaded.isEmpty, "the newer edit is a conflict copy too: \(then)")
        #expect(try await bucket.content(id, on: a) == Data("b1".utf8), "B's version stays the node's")
        let copies = try a.outline.conflictCopies()
        var contents = Set<Data>()
        for copy in copies { contents.insert(try await bucket.content(copy.nodeID, on: a)) }
        #expect(contents == [Data("a1".utf8), Data("a2".utf8)], "each of A's edits is in a conflict copy")
    }

    @Test(arguments: Kind.allCases) func writesHonourTheirCondition(_ kind: Kind) async throws {
        let bucket = try await Bucket(kind)
        let remote = bucket.remote
        let first = try await remote.write("records/x.rec", data: Data("one".utf8), condition: .absent)
        await #expect(throws: RemoteError.self) {
            _ = try await remote.write("records/x.rec", data: Data("two".utf8), condition: .absent)
        }
        let second = try await remote.write("records/x.rec", data: Data("two".utf8), condition: .matches(first.etag))
        #expect(second.etag != first.etag)
        // Based on the first version, which is gone: refused, and the object is still the second.
        do {
            _ = try await remote.write("records/x.rec", data: Data("three".utf8), condition: .matches(first.etag))
            Issue.record("a write based on a replaced version landed")
        } catch {
            #expect(error.code == .preconditionFailed, "\(error)")
        }
        #expect(try await remote.readAll("records/x.rec") == Data("two".utf8))
        // An update of an object that is not there is refused too (it went since the change was based on it).
        do {
            _ = try await remote.write("records/missing.rec", data: Data("x".utf8), condition: .matches(second.etag))
            Issue.record("an update of a missing object landed")
        } catch {
            #expect(error.code == .preconditionFailed, "\(error)")
        }
        #expect(try await remote.info("records/missing.rec") == nil)
    }

    /// Eight writers all based on the same version: exactly one lands.
    @Test(arguments: Kind.allCases) func ofWritersBasedOnOneVersionExactlyOneLands(_ kind: Kind) async throws {
        let bucket = try await Bucket(kind)
        let remote = bucket.remote
        let base = try await remote.write("records/y.rec", data: Data("base".utf8), condition: .absent)
        let landed = try await withThrowingTaskGroup(of: Bool.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    do {
                        _ = try await remote.write("records/y.rec", data: Data("writer \(writer)".utf8), condition: .matches(base.etag))
                        return true
                    } catch let error as RemoteError where error.code == .preconditionFailed {
                        return false
                    }
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(landed == 1)
        let final = String(decoding: try #require(try await remote.readAll("records/y.rec")), as: UTF8.self)
        #expect(final.hasPrefix("writer "))
    }

    /// B pushes a change based on an older record than the bucket's: the node keeps A's version, on B too,
    /// and B's file becomes a conflict copy beside it, which both stores read and B's status lists.
    @Test(arguments: Kind.allCases) func aPushBasedOnAnOldRecordBecomesAConflictCopy(_ kind: Kind) async throws {
        let bucket = try await Bucket(kind)
        let (a, b) = (bucket.setup.a, bucket.setup.b)
        let id = try NodeID("report")
        let folder = "0f0f0f"
        try await bucket.sync(a, host: "machine-a").push(dataFile: bucket.setup.file("v1", Data("version 1".utf8)), nodeID: id, name: "report.txt", parentID: folder)
        _ = try await bucket.sync(b).pull()
        try await bucket.sync(a, host: "machine-a").push(dataFile: bucket.setup.file("v2", Data("version 2 from A".utf8)), nodeID: id, name: "report.txt", parentID: folder)

        // B has not pulled version 2: its change is based on version 1.
        let result = try await bucket.sync(b).push(dataFile: bucket.setup.file("v3", Data("version 3 from B".utf8)), nodeID: id, name: "report.txt", parentID: folder)
        let copy = try #require(result.conflict)
        #expect(copy.originalID == id)
        #expect(copy.name.hasPrefix("report (conflict machine-b "), "\(copy.name)")
        #expect(copy.name.range(of: #"\(conflict machine-b \d{4}-\d{2}-\d{2} \d{6}\)\.txt$"#, options: .regularExpression) != nil, "\(copy.name)")
        #expect(result.entry.nodeID == copy.nodeID && result.entry.parentID == folder && result.entry.name == copy.name)
        #expect(try b.outline.conflictCopies() == [copy])

        // Nothing lost: the node is A's version 2 everywhere, the copy is B's version 3.
        _ = try await bucket.sync(a).pull()
        #expect(try await bucket.content(id, on: a) == Data("version 2 from A".utf8))
        #expect(try await bucket.content(copy.nodeID, on: a) == Data("version 3 from B".utf8))
        #expect(try await a.outline.entry(copy.nodeID)?.name == copy.name)
        #expect(try await b.outline.entry(id)?.cloudETag == a.outline.entry(id)?.cloudETag)
        #expect(try await bucket.content(id, on: b) == Data("version 2 from A".utf8))

        // B now knows version 2, so its next change lands on the node.
        let next = try await bucket.sync(b).push(dataFile: bucket.setup.file("v4", Data("version 4 from B".utf8)), nodeID: id, name: "report.txt", parentID: folder)
        #expect(next.conflict == nil)
        _ = try await bucket.sync(a).pull()
        #expect(try await bucket.content(id, on: a) == Data("version 4 from B".utf8))

        // A conflict copy is listed until its node is deleted.
        try await b.deleteNode(copy.nodeID)
        #expect(try b.outline.conflictCopies().isEmpty)
    }

    /// A push to a node this store never saw, which the bucket has: not a silent overwrite.
    @Test func aPushToANodeThisStoreNeverPulledIsAConflict() async throws {
        let bucket = try await Bucket(.file)
        let id = try NodeID("shared")
        try await bucket.sync(bucket.setup.a).push(dataFile: bucket.setup.file("from-a", Data("A's".utf8)), nodeID: id)
        let result = try await bucket.sync(bucket.setup.b).push(dataFile: bucket.setup.file("from-b", Data("B's".utf8)), nodeID: id)
        let copy = try #require(result.conflict)
        // An unnamed node's copy is named after the node's ID.
        #expect(copy.name.hasPrefix("shared (conflict machine-b "))
        #expect(try await bucket.content(id, on: bucket.setup.a) == Data("A's".utf8))
    }

    /// Two stores push the same node at once, both based on the same record: one wins the node, the other's
    /// file is a conflict copy; both versions are in the bucket, and every record names an existing file.
    @Test(arguments: Kind.allCases) func concurrentPushesLoseNothing(_ kind: Kind) async throws {
        let bucket = try await Bucket(kind)
        let (a, b) = (bucket.setup.a, bucket.setup.b)
        let id = try NodeID("race")
        try await bucket.sync(a).push(dataFile: bucket.setup.file("base", Data("base".utf8)), nodeID: id, name: "race.bin")
        _ = try await bucket.sync(b).pull()
        for round in 0..<4 {
            let fromA = CloudTests.bytes(200_000 + round, seed: UInt64(round * 2 + 1))
            let fromB = CloudTests.bytes(200_000 + round, seed: UInt64(round * 2 + 2))
            let (pathA, pathB) = (try bucket.setup.file("from-a\(round)", fromA), try bucket.setup.file("from-b\(round)", fromB))
            let (syncA, syncB) = (bucket.sync(a, host: "machine-a"), bucket.sync(b, host: "machine-b"))
            async let pushA = syncA.push(dataFile: pathA, nodeID: id, name: "race.bin")
            async let pushB = syncB.push(dataFile: pathB, nodeID: id, name: "race.bin")
            let (resultA, resultB) = try await (pushA, pushB)
            // Both were based on the record both had pulled: exactly one lands on the node.
            #expect((resultA.conflict == nil) != (resultB.conflict == nil), "round \(round)")
            _ = try await bucket.sync(a).pull()
            _ = try await bucket.sync(b).pull()
            var found = [try await bucket.content(id, on: a)]
            for copy in [resultA.conflict, resultB.conflict].compactMap({ $0 }) {
                found.append(try await bucket.content(copy.nodeID, on: a))
            }
            #expect(found.contains(fromA) && found.contains(fromB), "round \(round): a version was lost")
            #expect(try await bucket.content(id, on: b) == found[0])
        }
        let check = try await CloudSync(manager: a, remote: bucket.remote).checkRemote()
        #expect(check.problems.isEmpty, "\(check.problems)")
    }

    /// A record that does not authenticate is never overwritten by a push: the push fails in one line.
    @Test func aPushNeverOverwritesARecordThatDoesNotAuthenticate() async throws {
        let bucket = try await Bucket(.file)
        let id = try NodeID("tampered")
        try await bucket.sync(bucket.setup.a).push(dataFile: bucket.setup.file("from-a", Data("A".utf8)), nodeID: id)
        let key = CloudLayout.record(id, with: bucket.setup.a)
        var bytes = try #require(try await bucket.remote.readAll(key))
        bytes[bytes.count - 1] ^= 1
        _ = try await bucket.remote.write(key, data: bytes)
        do {
            try await bucket.sync(bucket.setup.a).push(dataFile: bucket.setup.file("from-b", Data("B".utf8)), nodeID: id)
            Issue.record("a push overwrote a record that does not authenticate")
        } catch let error as RemoteError {
            #expect(error.message.contains("does not authenticate; it was not overwritten"), "\(error)")
        }
        #expect(try await bucket.remote.readAll(key) == bytes)
    }

    @Test func conflictNamesStayValidNames() {
        let date = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11-18 11:06:40 UTC
        let utc = TimeZone(identifier: "UTC")!
        // The extension stays at the end, so the copy opens with the same program; a hidden file's dot is no extension.
        #expect(ConflictName.make(original: "notes.txt", host: "laptop", date: date, timeZone: utc)
                == "notes (conflict laptop 2026-11-18 110640).txt")
        #expect(ConflictName.make(original: ".bashrc", host: "laptop", date: date, timeZone: utc)
                == ".bashrc (conflict laptop 2026-11-18 110640)")
        #expect(ConflictName.make(original: "archive.tar.gz", host: "laptop", date: date, timeZone: utc)
                == "archive.tar (conflict laptop 2026-11-18 110640).gz")
        let long = String(repeating: "é", count: 200)  // 400 bytes
        let name = ConflictName.make(original: long, host: "a/b", date: date, timeZone: utc)
        #expect(name.utf8.count <= 255 && NodeRecord.isValidName(name))
        #expect(name.hasSuffix(" (conflict ab 2026-11-18 110640)"))
    }
}
