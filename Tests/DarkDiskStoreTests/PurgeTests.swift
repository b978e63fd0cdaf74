import DarkDiskStore
import Foundation
import Testing

/// After an outside purge of the cache folder, the pools' totals (status, the pool
/// xattrs) stop counting the files that went, at start-up and on the maintenance timer, without `check`.
@Suite struct PurgeTests {
    private func cacheStatus(_ manager: DiskManager) throws -> (files: Int, bytes: UInt64) {
        let data = try #require(try manager.files.status().first { $0.pool == .data })
        return (data.fileCount, data.cachedSize)
    }

    @Test func aPurgedCacheFolderIsNoticedAndTheTotalsCorrected() async throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        for index in 0..<3 {
            try await manager.importNodeFile(DiskImport(cleartextData: TemporaryStore.bytes(10_000, seed: UInt64(index))), nodeID: NodeID("c\(index)"))
        }
        var persistent = DiskImport(cleartextData: TemporaryStore.bytes(5_000))
        persistent.storePersistently = true
        try await manager.importNodeFile(persistent, nodeID: NodeID("p"))
        manager.files.waitForMaintenance()
        #expect(try cacheStatus(manager).files == 4 && cacheStatus(manager).bytes > 30_000)

        // Purged while the store is open: the maintenance timer notices.
        try FileManager.default.removeItem(atPath: store.location.cacheDirectory)
        var corrected = false
        for _ in 0..<100 where !corrected {
            corrected = try cacheStatus(manager).bytes == 0
            if !corrected { try await Task.sleep(nanoseconds: 100_000_000) }
        }
        let status = try cacheStatus(manager)
        #expect(corrected, "the timer corrects the totals: \(status)")
        #expect(try cacheStatus(manager).files == 1, "the persistent file is still counted")
        #expect(try manager.check().problems.isEmpty)

        // Purged while no process has it open: the next start-up notices.
        try await manager.importNodeFile(DiskImport(cleartextData: TemporaryStore.bytes(10_000)), nodeID: NodeID("again"))
        manager.files.waitForMaintenance()
        try FileManager.default.removeItem(atPath: store.location.cacheDirectory + "/files")
        let next = try store.open()
        next.files.waitForMaintenance()
        let afterRestart = try cacheStatus(next)
        #expect(afterRestart.bytes == 0 && afterRestart.files == 1, "\(afterRestart)")
        withExtendedLifetime(manager) {}
    }
}
