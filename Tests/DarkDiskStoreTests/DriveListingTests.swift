import DarkDiskStore
import DarkDiskCrypto
import Foundation
import Testing

/// A drive folder's listing (`DiskManager.driveListing`): every named node in the folder, each with what
/// `ls -l` shows of its data (the stored version's size, else the size the outline gives it), the nodes
/// whose folder is missing at the top, and nothing unnamed or from another folder.
@Suite struct DriveListingTests {
    @Test func aListingCarriesEachNodesDataAndItsOrphansAtTheTop() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let folder = try manager.createDriveNode(named: "docs", in: nil, attributes: NodeAttributes(kind: .folder, mode: 0o750))
        let (written, content) = try manager.createDriveFile(named: "written.txt", in: folder.id,
                                                             attributes: NodeAttributes(kind: .file, mode: 0o600, modifiedSeconds: 1_700_000_000))
        let bytes = TemporaryStore.bytes(70_000, seed: 9)
        try bytes.withUnsafeBytes { try content.write(offset: 0, bytes: $0) }
        try manager.commitDriveFile(written.id, content: content)
        let link = try manager.createDriveNode(named: "link", in: folder.id, attributes: NodeAttributes(kind: .symlink, target: "written.txt"))

        // A node only the remote has (a pull listed it), in the folder; another whose folder is unknown.
        let remoteOnly = try NodeID("remote-only"), stray = try NodeID("stray")
        try manager.outline.update([
            OutlineEntry(nodeID: remoteOnly, name: "remote.bin", parentID: folder.id.rawValue, metadataSize: 0, thumbnailSize: 0,
                         dataSize: 123_456, wrappedKey: manager.keys.wrap(SymmetricKey.random(), for: .node(remoteOnly)), cloudETag: "e1"),
            OutlineEntry(nodeID: stray, name: "stray.bin", parentID: "no-such-folder", metadataSize: 0, thumbnailSize: 0,
                         dataSize: 5, wrappedKey: manager.keys.wrap(SymmetricKey.random(), for: .node(stray)), cloudETag: "e2"),
        ])

        let inFolder = try manager.driveListing(of: folder.id)
        let byName = Dictionary(uniqueKeysWithValues: inFolder.map { ($0.node.name, $0) })
        #expect(byName.keys.sorted() == ["link", "remote.bin", "written.txt"])
        let file = try #require(byName["written.txt"])
        #expect(file.data?.plaintextSize == 70_000)
        #expect(file.data?.kind == .data)
        #expect(file.node.attributes.mode == 0o600)
        #expect(file.node.parentID == folder.id)
        #expect(file.remoteDataSize == nil, "never uploaded")
        let remote = try #require(byName["remote.bin"])
        #expect(remote.data == nil)
        #expect(remote.remoteDataSize == 123_456)
        #expect(byName["link"]?.node.attributes.target == "written.txt")
        #expect(byName["link"]?.node.id == link.id)

        let top = try manager.driveListing(of: nil)
        #expect(Set(top.map(\.node.name)) == ["docs", "stray.bin"])
        #expect(top.first { $0.node.name == "stray.bin" }?.node.parentID == nil, "an orphan is shown at the top")
        #expect(top.first { $0.node.name == "docs" }?.node.attributes.kind == .folder)

        // The listing and a lookup by name agree.
        #expect(try manager.driveChildren(of: folder.id, named: "written.txt").map(\.attributes) == [file.node.attributes])
    }
}
