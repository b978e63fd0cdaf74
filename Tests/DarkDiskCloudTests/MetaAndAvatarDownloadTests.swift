import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskSync
import Foundation
import Testing

/// `downloadNodeMeta` (header, metadata, thumbnail by range) and `downloadUserAvatar` (from user records).
@Suite struct MetaAndAvatarDownloadTests {
    @Test func metaComesByRangeWithoutTheData() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(3_000_000, seed: 41)
        let thumbnail = CloudTests.bytes(20_000, seed: 42)
        let metadata = Data(#"{"name":"movie.mp4"}"#.utf8)
        let id = try NodeID("film")
        try await CloudSync(manager: setup.a, remote: setup.remote)
            .push(dataFile: setup.file("film", data), nodeID: id, thumbnail: thumbnail, metadata: metadata)
        _ = try await CloudSync(manager: setup.b, remote: setup.remote).pull()

        let counting = FaultyRemote(setup.remote)
        let downloads = DownloadManager(manager: setup.b, remote: counting)
        let meta = try await downloads.downloadNodeMeta(id).value
        #expect(meta.metadata == metadata && meta.thumbnail == thumbnail)
        let header = try #require(meta.header)
        #expect(header.sectionSizes == [UInt64(metadata.count), UInt64(thumbnail.count), 3_000_000])
        #expect(counting.reads.load(ordering: .relaxed) == 3, "header, metadata, thumbnail: one range request each")
        let expected = CryptoFormat.headerSize + Int(header.ciphertextLength(ofSection: 0) + header.ciphertextLength(ofSection: 1))
        #expect(counting.bytesRead.load(ordering: .relaxed) == expected)
        await #expect(try setup.b.files.nodeFile(id, kind: .data) == nil, "no data downloaded")

        // Cached by default: the next request is local.
        await #expect(try setup.b.files.nodeFile(id, kind: .thumbnail)?.pool == .thumbnails)
        await #expect(try setup.b.files.nodeFile(id, kind: .metadata) != nil)
        let again = try await downloads.downloadNodeMeta(id, components: [.metadata, .thumbnail]).value
        #expect(again.thumbnail == thumbnail && again.metadata == metadata)
        #expect(counting.reads.load(ordering: .relaxed) == 3)

        // Once the whole cloud file is local, the header comes from it too.
        _ = try await downloads.nodeData(id)
        let reads = counting.reads.load(ordering: .relaxed)
        #expect(try await downloads.downloadNodeMeta(id, components: .header).value.header == header)
        #expect(counting.reads.load(ordering: .relaxed) == reads)
    }

    @Test func absentSectionsAndUncachedMeta() async throws {
        let setup = try CloudTests.Setup()
        let id = try NodeID("bare")
        try await CloudSync(manager: setup.a, remote: setup.remote).push(dataFile: setup.file("bare", Data("x".utf8)), nodeID: id,
                                                                         metadata: Data("{}".utf8))
        _ = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        let counting = FaultyRemote(setup.remote)
        let meta = try await DownloadManager(manager: setup.b, remote: counting)
            .downloadNodeMeta(id, components: [.metadata, .thumbnail], options: DownloadOptions(cacheToDiskManager: false)).value
        #expect(meta.thumbnail == nil && meta.metadata == Data("{}".utf8) && meta.header == nil)
        #expect(counting.reads.load(ordering: .relaxed) == 2, "no request for an empty section")
        await #expect(try setup.b.files.nodeFile(id, kind: .metadata) == nil, "not cached when asked not to")
    }

    @Test func damagedOrForeignMetaIsAnError() async throws {
        let setup = try CloudTests.Setup()
        let one = try NodeID("one")
        let two = try NodeID("two")
        let sync = CloudSync(manager: setup.a, remote: setup.remote)
        try await sync.push(dataFile: setup.file("1", Data("one".utf8)), nodeID: one, thumbnail: Data(repeating: 7, count: 5000))
        try await sync.push(dataFile: setup.file("2", Data("two".utf8)), nodeID: two, thumbnail: Data(repeating: 9, count: 5000))
        _ = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        let rotten = FaultyRemote(setup.remote)
        rotten.corruptOffset.store(CryptoFormat.headerSize + 100, ordering: .relaxed)
        await #expect(throws: CryptoError.self) {
            _ = try await DownloadManager(manager: setup.b, remote: rotten).downloadNodeMeta(one, components: .thumbnail).value
        }
        await #expect(try setup.b.files.nodeFile(one, kind: .thumbnail) == nil)
        // Node two's cloud file swapped in for node one's: another node's key, refused at the header.
        let twoFile = try #require(try await setup.remote.readAll(try setup.cloudKey(two)))
        _ = try await setup.remote.write(try setup.cloudKey(one), data: twoFile)
        await #expect(throws: CryptoError.self) {
            _ = try await DownloadManager(manager: setup.b, remote: setup.remote).downloadNodeMeta(one).value
        }
    }

    @Test func avatarsFromUserRecords() async throws {
        let setup = try CloudTests.Setup()
        let user = try UserID("alice")
        let work = try IdentityID("auth0|5f1c@example.com")
        let home = try IdentityID("github|42")
        let picture = CloudTests.bytes(40_000, seed: 43)
        let sync = CloudSync(manager: setup.a, remote: setup.remote)
        try await sync.pushUserIdentity(user, identityID: home, avatar: nil)
        try await sync.pushUserIdentity(user, identityID: work, avatar: picture, display: true)

        let counting = FaultyRemote(setup.remote)
        let downloads = DownloadManager(manager: setup.b, remote: counting)
        let shown = try await downloads.downloadUserAvatar(user).value
        #expect(shown.identityID == work && shown.image == picture, "the display identity by default")
        #expect(try setup.b.files.storedAvatar(user, identityID: work)?.mode == .cache, "cached in the avatars pool")
        let local = downloads.downloadUserAvatar(user, identityID: work)
        #expect(local.isFinished)
        #expect(try await local.value.image == picture)

        let none = try await downloads.downloadUserAvatar(user, identityID: home).value
        #expect(none.image == nil, "an identity without an avatar is a definite 'none'")
        do {
            _ = try await downloads.downloadUserAvatar(user, identityID: IdentityID("twitter|1")).value
            Issue.record("an unknown identity was found")
        } catch let error as RemoteError { #expect(error.code == .notFound) }
        do {
            _ = try await downloads.downloadUserAvatar(UserID("nobody")).value
            Issue.record("an unknown user was found")
        } catch let error as RemoteError { #expect(error.code == .notFound) }

        // A record that claims another user is refused.
        let record = try #require(try await setup.remote.readAll(CloudLayout.user(user, with: setup.a)))
        _ = try await setup.remote.write(CloudLayout.user(UserID("mallory"), with: setup.a), data: record)
        do {
            _ = try await downloads.downloadUserAvatar(UserID("mallory")).value
            Issue.record("a record for another user was accepted")
        } catch let error as RemoteError { #expect(error.code == .invalidResponse) }
    }

    @Test func identicalAvatarRequestsShareOneTransfer() async throws {
        let setup = try CloudTests.Setup()
        let user = try UserID("bob")
        let picture = CloudTests.bytes(100_000, seed: 44)
        try await CloudSync(manager: setup.a, remote: setup.remote).pushUserIdentity(user, identityID: IdentityID("mail|bob"), avatar: picture)
        let slow = FaultyRemote(setup.remote)
        slow.delayPer64KiB.store(20_000, ordering: .relaxed)
        let downloads = DownloadManager(manager: setup.b, remote: slow)
        let tickets = (0..<20).map { _ in downloads.downloadUserAvatar(user) }
        for ticket in tickets { #expect(try await ticket.value.image == picture) }
        #expect(slow.reads.load(ordering: .relaxed) == 2, "the user record and the avatar, once: \(slow.reads.load(ordering: .relaxed))")
    }

    /// An avatar ticket reports progress as the bytes arrive, with throughput and time
    /// remaining (it reported once, at the end, with throughput 0), and the transfer is listed in flight.
    @Test func avatarTicketsReportProgressAndAreListedInFlight() async throws {
        let setup = try CloudTests.Setup()
        let user = try UserID("carol")
        let identity = try IdentityID("mail|carol")
        let picture = CloudTests.bytes(640_000, seed: 45)
        try await CloudSync(manager: setup.a, remote: setup.remote).pushUserIdentity(user, identityID: identity, avatar: picture)
        let slow = FaultyRemote(setup.remote)
        slow.delayPer64KiB.store(30_000, ordering: .relaxed)
        let downloads = DownloadManager(manager: setup.b, remote: slow)
        let reports = Locked<[DownloadProgress]>([])
        let ticket = downloads.downloadUserAvatar(user, identityID: identity)
        ticket.onProgress { progress in reports.withLock { $0.append(progress) } }

        // Listed while it runs, with the bytes it has.
        var listed: TransferStatus?
        for _ in 0..<200 where listed == nil {
            listed = downloads.transfersInFlight.first { $0.kind == .userAvatar && $0.completedBytes > 0 }
            if listed == nil { try await Task.sleep(nanoseconds: 10_000_000) }
        }
        let status = try #require(listed, "the avatar transfer was not listed with progress")
        #expect(status.ownerID == "carol" && status.identityID == "mail|carol" && status.requests == 1)
        #expect(status.totalBytes > UInt64(picture.count) && status.completedBytes < status.totalBytes && status.throughput > 0)
        #expect(status.subject == "avatar of user carol (identity mail|carol)")

        #expect(try await ticket.value.image == picture)
        let seen = reports.withLock { $0 }
        #expect(seen.count >= 5, "progress as the bytes arrive: \(seen.count) reports")
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.completedBytes <= $1.completedBytes }, "never goes back")
        let last = try #require(seen.last)
        #expect(last.completedBytes == last.totalBytes && last.throughput > 0)
        #expect(seen.contains { $0.estimatedTimeRemaining != nil && $0.completedBytes < $0.totalBytes }, "an ETA while it runs")
        #expect(downloads.transfersInFlight.isEmpty, "a finished transfer is no longer listed")
    }
}
