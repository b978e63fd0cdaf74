import DarkDiskStore
import DarkDiskCloud
import DarkDiskTestSupport
import Foundation
import Logging
import Testing

/// Every upload writes a new, immutable version of the node's cloud file, which the record
/// (written last) names; a machine reading the previous version goes on reading it; `gc` deletes versions
/// no record names once it has seen them so for the grace period.
@Suite struct CloudFileVersionTests {
    @Test func versionsAreImmutableAndCollectedAfterTheirGracePeriod() async throws {
        let setup = try CloudTests.Setup()
        let syncA = CloudSync(manager: setup.a, remote: setup.remote)
        let syncB = CloudSync(manager: setup.b, remote: setup.remote)
        let node = try NodeID("doc")
        let first = CloudTests.bytes(200_000, seed: 101), second = CloudTests.bytes(150_000, seed: 102)
        try await syncA.push(dataFile: setup.file("v1", first), nodeID: node)
        let firstKey = try setup.cloudKey(node)
        #expect(firstKey.hasPrefix("nodes/\(CloudLayout.nodeName(node, with: setup.a))/") && firstKey.hasSuffix(".ddc") && !firstKey.contains("doc"), "\(firstKey)")
        _ = try await syncB.pull()

        // A pushes a second version; B, not having pulled, still reads the first, whole and unmixed.
        try await syncA.push(dataFile: setup.file("v2", second), nodeID: node)
        let secondKey = try setup.cloudKey(node)
        let firstStill = try await setup.remote.info(firstKey)
        #expect(secondKey != firstKey && firstStill != nil, "the first version is still there")
        let old = try await DownloadManager(manager: setup.b, remote: setup.remote).nodeData(node)
        #expect(try CloudTests().plaintext(old) == first)
        _ = try await syncB.pull()
        let new = try await DownloadManager(manager: setup.b, remote: setup.remote).nodeData(node)
        #expect(try CloudTests().plaintext(new) == second)

        // Stray objects: a legacy-layout file of a node no record names, and the files of a node whose
        // record does not open (they must survive: nobody can tell which version it names).
        _ = try await setup.remote.write("nodes/gone.ddc", data: Data("legacy".utf8))
        _ = try await setup.remote.write(CloudLayout.record(NodeID("locked"), with: setup.a), data: Data("not a sealed record".utf8))
        let lockedFile = CloudLayout.cloudFile(try NodeID("locked"), version: CloudLayout.newVersion(), with: setup.a)
        _ = try await setup.remote.write(lockedFile, data: Data("unknown".utf8))
        _ = try await setup.remote.write("nodes/README", data: Data("not ours".utf8))

        var result = try await syncB.collectGarbage(grace: 3600)
        let lockedRecord = CloudLayout.record(try NodeID("locked"), with: setup.a)
        #expect(result.deleted.isEmpty && result.waiting == 2 && result.skippedNodes == [lockedRecord], "\(result)")
        result = try await syncB.collectGarbage(grace: 0)
        #expect(Set(result.deleted) == [firstKey, "nodes/gone.ddc"] && result.waiting == 0, "\(result)")
        #expect(result.deletedBytes > 200_000)
        #expect(try await setup.remote.info(firstKey) == nil)
        #expect(try await setup.remote.info(secondKey) != nil)
        #expect(try await setup.remote.info(lockedFile) != nil, "a node whose record does not open keeps its files")
        #expect(try await setup.remote.info("nodes/README") != nil, "only darkdisk's cloud files are candidates")
        let again = try await DownloadManager(manager: setup.b, remote: setup.remote).downloadNodeData(node, options: DownloadOptions(cacheToDiskManager: true, policy: .remote)).value
        #expect(try CloudTests().plaintext(try #require(again.export)) == second, "the current version reads after gc")
    }

    /// The mount daemon's poller collects garbage too.
    @Test func thePollerCollectsUnnamedVersions() async throws {
        let setup = try CloudTests.Setup()
        let syncA = CloudSync(manager: setup.a, remote: setup.remote)
        let node = try NodeID("polled")
        try await syncA.push(dataFile: setup.file("v1", CloudTests.bytes(10_000, seed: 7)), nodeID: node)
        let firstKey = try setup.cloudKey(node)
        try await syncA.push(dataFile: setup.file("v2", CloudTests.bytes(10_000, seed: 8)), nodeID: node)
        let poller = RemotePoller(sync: CloudSync(manager: setup.b, remote: setup.remote), interval: 0.02, gcInterval: 0, gcGrace: 0,
                                  logger: Logger(label: "test"))
        defer { poller.stop() }
        var gone = false
        for _ in 0..<200 where !gone {
            try await Task.sleep(for: .milliseconds(20))
            gone = try await setup.remote.info(firstKey) == nil
        }
        #expect(gone, "the poller did not delete the unnamed version")
        #expect(try await setup.remote.info(try setup.cloudKey(node)) != nil)
    }

    /// The grace period spans runs: the first sighting is kept in the store.
    @Test func theGracePeriodCountsFromTheFirstSighting() async throws {
        let setup = try CloudTests.Setup()
        let clock = ManualClock()
        let store = try DiskManager.create(at: StoreLocation(directory: setup.directory + "/clocked"), clock: clock)
        let sync = CloudSync(manager: store, remote: setup.remote)
        let node = try NodeID("n")
        try await sync.push(dataFile: setup.file("1", Data("one".utf8)), nodeID: node)
        let old = CloudLayout.cloudFile(of: try #require(try await store.outline.entry(node)), with: store)
        try await sync.push(dataFile: setup.file("2", Data("two".utf8)), nodeID: node)
        #expect(try await sync.collectGarbage(grace: 60).waiting == 1)
        clock.advance(by: 59)
        #expect(try await sync.collectGarbage(grace: 60).waiting == 1, "59 s after the first sighting: kept")
        clock.advance(by: 2)
        let result = try await sync.collectGarbage(grace: 60)
        #expect(result.deleted == [old] && result.waiting == 0, "\(result)")
    }
}
