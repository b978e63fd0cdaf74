import DarkDiskStore
import DarkDiskCloud
import Foundation
import Testing

/// The DownloadManager's own folders in the cache directory (`downloads`, `partial`) are swept and written
/// only when they are real folders: a symbolic link planted in their place never leads it outside the store.
@Suite struct PlantedDownloadLinkTests {
    @Test func aLinkedDownloadsFolderIsNeitherSweptNorWritten() async throws {
        let setup = try CloudTests.Setup()
        let node = try await setup.pushedAndPulled(CloudTests.bytes(100_000, seed: 61), as: "n")
        let outside = setup.directory + "/outside"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        // Named exactly like the manager's own temporary downloads, and unlocked: the sweep would take it.
        let lookalike = outside + "/" + UUID().uuidString + ".ddc"
        try Data("someone else's file".utf8).write(to: URL(fileURLWithPath: lookalike))
        let downloads = setup.b.location.cacheDirectory + "/downloads"
        try? FileManager.default.removeItem(atPath: downloads)
        try FileManager.default.createDirectory(atPath: setup.b.location.cacheDirectory, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: downloads, withDestinationPath: outside)

        let manager = DownloadManager(manager: setup.b, remote: setup.remote)
        #expect(FileManager.default.fileExists(atPath: lookalike), "the start-up sweep did not follow the link")
        do {
            _ = try await manager.downloadNodeData(node, options: DownloadOptions(cacheToDiskManager: false)).value
            Issue.record("an uncached download was written through a planted link")
        } catch let error as RemoteError {
            #expect(error.code == .io && error.message.contains("symbolic link"), "\(error.message)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside) == [(lookalike as NSString).lastPathComponent])
    }
}
