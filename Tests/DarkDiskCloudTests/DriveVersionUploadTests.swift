import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import Foundation
import Testing

/// A version of a drive file is stored as the cloud file its upload sends, so that the upload sends it as it
/// is: each byte is sealed once, when written, instead of also being decrypted and re-encrypted on upload.
@Suite struct DriveVersionUploadTests {
    @Test func aDriveVersionGoesUpAsItIsStoredAndIsThenTheRemotesVersion() async throws {
        let setup = try CloudTests.Setup()
        let (node, content) = try setup.a.createDriveFile(named: "doc.bin", in: nil, attributes: NodeAttributes(kind: .file, mode: 0o644))
        let bytes = CloudTests.bytes(300_000, seed: 71)
        try bytes.withUnsafeBytes { try content.write(offset: 0, bytes: $0) }
        try setup.a.commitDriveFile(node.id, content: content)

        let stored = try await #require(try setup.a.files.storedFile(node.id, kind: .data))
        #expect(stored.format == .cloudFile)
        #expect(!stored.isRemoteVersion(of: try await setup.a.outline.entry(node.id)), "not uploaded yet: a version of its own")
        let export = try #require(try await setup.a.files.nodeFile(node.id, kind: .data))
        let header = try export.reader().header
        let storedBytes = try Data(contentsOf: URL(fileURLWithPath: export.cryptoFile.path))
        #expect(UInt64(storedBytes.count) == header.fileLength)

        _ = try await CloudSync(manager: setup.a, remote: setup.remote).uploadQueued(node.id)
        let outline = try #require(try await setup.a.outline.entry(node.id))
        let object = try Data(contentsOf: URL(fileURLWithPath: setup.remote.root + "/" + CloudLayout.cloudFile(of: outline, with: setup.a)))
        #expect(object.count > storedBytes.count, "padded")
        #expect(object.prefix(storedBytes.count) == storedBytes, "the object is the stored file, byte for byte, then its padding")
        #expect(outline.cloudFileID == header.fileID, "the record names the stored file's own file ID")
        let after = try await #require(try setup.a.files.storedFile(node.id, kind: .data))
        #expect(after.isRemoteVersion(of: outline), "uploaded: the stored file is the remote's version")

        // Another machine reads what went up.
        _ = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        let downloaded = try await DownloadManager(manager: setup.b, remote: setup.remote).nodeData(node.id)
        let reader = try downloaded.reader()
        #expect(Data(try reader.read(section: reader.dataSection, offset: 0, count: bytes.count + 1)) == bytes)
        #expect(downloaded.isRemoteVersion(of: try await setup.b.outline.entry(node.id)))
    }

    /// A node pushed with a thumbnail, then rewritten through the drive: the new version is a cloud file with an
    /// empty thumbnail section, but until it is uploaded it is not the remote's version, so the thumbnail read
    /// from the store is still the remote's, not the new version's empty one.
    @Test func aRewrittenVersionIsNotTakenForTheRemotesBeforeItsUpload() async throws {
        let setup = try CloudTests.Setup()
        let id = try NodeID("pic")
        let thumbnail = Data(CloudTests.bytes(4_000, seed: 72))
        try await CloudSync(manager: setup.a, remote: setup.remote).push(dataFile: setup.file("pic", CloudTests.bytes(50_000, seed: 73)),
                                                                         nodeID: id, name: "pic.png", thumbnail: thumbnail)
        _ = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        let downloads = DownloadManager(manager: setup.b, remote: setup.remote)
        _ = try await downloads.nodeData(id)
        let outline = try #require(try await setup.b.outline.entry(id))
        await #expect(try #require(try setup.b.files.storedFile(id, kind: .data)).isRemoteVersion(of: outline), "downloaded: the remote's version")

        let content = try setup.b.stagedContent(for: id, base: try await setup.b.files.nodeFile(id, kind: .data))
        try Data("new".utf8).withUnsafeBytes { try content.write(offset: 0, bytes: $0) }
        try setup.b.commitDriveFile(id, content: content)
        let rewritten = try await #require(try setup.b.files.storedFile(id, kind: .data))
        #expect(rewritten.format == .cloudFile)
        #expect(!rewritten.isRemoteVersion(of: try await setup.b.outline.entry(id)), "written here: its own version")
        let meta = try await downloads.downloadNodeMeta(id, components: [.thumbnail]).value
        #expect(meta.thumbnail == thumbnail, "the thumbnail is still the remote's")
    }
}
