import DarkDiskStore
import DarkDiskCloud
import Foundation
import Testing

/// The seeds' fetch options on the DownloadManager, per call: "never download"
/// (`.storedOnly`) asks the remote nothing, and "refresh" (`.remote`) asks it even when a copy is stored,
/// replacing that copy (a persistent one stays persistent).
@Suite struct FetchPolicyTests {
    @Test func neverDownloadAndRefresh() async throws {
        let setup = try CloudTests.Setup()
        let node = try NodeID("photo")
        let data = CloudTests.bytes(300_000, seed: 71)
        let thumbnail = CloudTests.bytes(20_000, seed: 72)
        try await CloudSync(manager: setup.a, remote: setup.remote).push(dataFile: setup.file("photo", data), nodeID: node, thumbnail: thumbnail)
        let user = try UserID("dana")
        let identity = try IdentityID("mail|dana")
        let picture = CloudTests.bytes(30_000, seed: 73)
        try await CloudSync(manager: setup.a, remote: setup.remote).pushUserIdentity(user, identityID: identity, avatar: picture)
        _ = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        let counting = FaultyRemote(setup.remote)
        let downloads = DownloadManager(manager: setup.b, remote: counting)
        func reads() -> Int { counting.reads.load(ordering: .relaxed) }

        // Never download, nothing stored: one clear error each, and the remote is not asked.
        for attempt in [
            { _ = try await downloads.downloadNodeMeta(node, components: .thumbnail, options: DownloadOptions.nodeMeta.with(.storedOnly)).value },
            { _ = try await downloads.downloadNodeData(node, options: DownloadOptions(cacheToDiskManager: true, policy: .storedOnly)).value },
            { _ = try await downloads.downloadUserAvatar(user, identityID: identity, options: DownloadOptions.userAvatar.with(.storedOnly)).value },
            { _ = try await downloads.downloadUserAvatar(user, options: DownloadOptions.userAvatar.with(.storedOnly)).value },
        ] as [@Sendable () async throws -> Void] {
            do {
                try await attempt()
                Issue.record("a request that may not download was answered with nothing stored")
            } catch let error as RemoteError {
                #expect(error.code == .notLocal && (error.message.contains("not stored locally") || error.message.contains("no avatar stored locally")), "\(error)")
            }
        }
        #expect(reads() == 0, "a request that may not download asked the remote")
        // A section the outline says is absent is no error.
        let noMetadata = try await downloads.downloadNodeMeta(node, components: .metadata, options: DownloadOptions.nodeMeta.with(.storedOnly)).value
        #expect(noMetadata.metadata == nil && reads() == 0)

        // Downloaded once (default policy), then answered from the store without the remote.
        #expect(try await downloads.downloadNodeMeta(node, components: .thumbnail).value.thumbnail == thumbnail)
        #expect(try await downloads.downloadNodeData(node, options: DownloadOptions(cacheToDiskManager: true)).value.export != nil)
        #expect(try await downloads.downloadUserAvatar(user, identityID: identity).value.image == picture)
        let afterDownloads = reads()
        #expect(try await downloads.downloadNodeMeta(node, components: .thumbnail, options: DownloadOptions.nodeMeta.with(.storedOnly)).value.thumbnail == thumbnail)
        #expect(try await downloads.downloadNodeData(node, options: DownloadOptions(cacheToDiskManager: true, policy: .storedOnly)).value.export != nil)
        #expect(try await downloads.downloadUserAvatar(user, options: DownloadOptions.userAvatar.with(.storedOnly)).value.image == picture,
                "without an identity: the user's most recently stored avatar")
        #expect(reads() == afterDownloads, "stored copies answer a request that may not download")

        // Refresh: the remote is asked although copies are stored, and they are replaced; kept ones stay kept.
        try await setup.b.files.makeNodeFilePersistent(true, nodeID: node, kind: .thumbnail)
        try await setup.b.files.makeNodeFilePersistent(true, nodeID: node, kind: .data)
        let oldThumbnail = try await #require(try setup.b.files.storedFile(node, kind: .thumbnail))
        let oldData = try await #require(try setup.b.files.storedFile(node, kind: .data))
        let oldAvatar = try #require(try setup.b.files.storedAvatar(user, identityID: identity))
        let refreshed = try await downloads.downloadNodeMeta(node, components: .thumbnail, options: DownloadOptions.nodeMeta.with(.remote)).value
        #expect(refreshed.thumbnail == thumbnail)
        let dataTicket = downloads.downloadNodeData(node, options: DownloadOptions(cacheToDiskManager: true, policy: .remote))
        #expect(!dataTicket.isFinished, "a refresh of stored data is a transfer, not a local answer")
        let refreshedData = try #require(try await dataTicket.value.export)
        #expect(try await downloads.downloadUserAvatar(user, identityID: identity, options: DownloadOptions.userAvatar.with(.remote)).value.image == picture)
        #expect(reads() >= afterDownloads + 4, "the refreshes asked the remote (\(reads() - afterDownloads) reads)")
        let newThumbnail = try await #require(try setup.b.files.storedFile(node, kind: .thumbnail))
        let newData = try await #require(try setup.b.files.storedFile(node, kind: .data))
        let newAvatar = try #require(try setup.b.files.storedAvatar(user, identityID: identity))
        #expect(newThumbnail.fileID != oldThumbnail.fileID && newData.fileID != oldData.fileID && newAvatar.fileID != oldAvatar.fileID,
                "the stored copies were replaced by the remote's")
        #expect(newThumbnail.mode == .persistent && newData.mode == .persistent, "a refresh keeps a persistent file persistent")
        #expect(refreshedData.isStoredPersistently)
        let reader = try refreshedData.reader()
        #expect(Data(try reader.read(section: reader.dataSection, offset: 0, count: data.count)) == data)
    }
}
