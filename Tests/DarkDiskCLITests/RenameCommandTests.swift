import DarkDiskStore
import DarkDiskTestTraits
import Foundation
import Testing

/// `push --node ID --name NEW` of a node whose data is only the remote's queues a rewrite of its record
/// alone: a rename or move that downloads nothing and uploads no new cloud file.
@Suite(.processSlots) struct RenameCommandTests {
    @Test func pushWithoutFileRenamesARemoteOnlyNodeWithoutDownloadingIt() async throws {
        let setup = try RemoteBucket()
        try RemoteBucket.check(try await setup.a.darkdisk(["push", try setup.a.file("d", CLIStore.bytes(200_000, seed: 5)), "--node", "doc",
                                                     "--name", "draft.txt", "--passphrase-file", setup.passphrase]), "push")
        try setup.join("file://" + setup.bucket)
        let versions = try FileManager.default.contentsOfDirectory(atPath: try setup.cloudFolder("doc"))

        // Queued without waiting: status says what it is.
        try RemoteBucket.check(try setup.darkdiskB(["push", "--node", "doc", "--name", "final.txt", "--parent", "reports", "--no-wait"]), "rename")
        let status = try setup.darkdiskB(["status"])
        #expect(status.output.contains("(node doc): pending (its record: a rename or move)"), "\(status.output)")
        try RemoteBucket.check(try setup.darkdiskB(["sync"]), "sync")
        #expect(try FileManager.default.contentsOfDirectory(atPath: try setup.cloudFolder("doc")) == versions, "no new cloud file")
        let queue = try JSONSerialization.jsonObject(with: try setup.darkdiskB(["status", "--json"]).stdout) as? [String: Any]
        #expect((queue?["uploads"] as? [Any])?.isEmpty == true, "the queue is empty")
        #expect(try setup.poolB()["files"] as? Int == 0, "nothing downloaded")

        try RemoteBucket.check(try await setup.a.darkdisk(["pull", "--passphrase-file", setup.passphrase]), "pull on A")
        let manager = try DiskManager(location: StoreLocation(directory: setup.a.storePath), passphrase: Array("mount tests".utf8))
        let entry = try #require(try await manager.outline.entry(NodeID("doc")))
        #expect(entry.name == "final.txt" && entry.parentID == "reports")
        let exported = try setup.darkdiskB(["export", "--node", "doc", "-o", setup.b.directory + "/out"])
        #expect(exported.status == 0, "readable on demand")
    }
}
