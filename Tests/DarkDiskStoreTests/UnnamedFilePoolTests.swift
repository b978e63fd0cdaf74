@testable import DarkDiskStore
import DarkDiskSync
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// New stored files made ahead of need (`UnnamedFilePool`): the pool fills to its capacity on its own
/// thread, hands out each file once, fills again when half are taken, and stops filling (without failing a
/// take) when no file can be made; the drive's commits take their new versions from it.
@Suite struct UnnamedFilePoolTests {
    @Test func thePoolFillsHandsEachFileOutOnceAndFillsAgain() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let made = Locked(0)
        let folder = manager.location.persistentStaging
        let pool = UnnamedFilePool {
            made.withLock { $0 += 1 }
            return try? UnnamedFile(in: folder)
        }
        #expect(try waitFor { made.withLock { $0 } == UnnamedFilePool.capacity })
        var taken: [UnnamedFile] = []
        for _ in 0..<UnnamedFilePool.capacity { taken.append(try #require(pool.take())) }
        #expect(Set(taken.map(\.fileDescriptor)).count == UnnamedFilePool.capacity)
        // Half taken started a refill; the pool is full again.
        #expect(try waitFor { made.withLock { $0 } >= 2 * UnnamedFilePool.capacity - UnnamedFilePool.capacity / 2 })
        #expect(pool.take() != nil)
    }

    @Test func aPoolThatCannotMakeFilesHandsOutNoneAndTheCallerMakesItsOwn() throws {
        let tries = Locked(0)
        let pool = UnnamedFilePool {
            tries.withLock { $0 += 1 }
            return nil
        }
        #expect(try waitFor { tries.withLock { $0 } >= 1 })
        #expect(pool.take() == nil)
        #expect(try waitFor { tries.withLock { $0 } >= 2 })
    }

    /// The mount's drive commits take their new versions from the pool while the drive journals.
    @Test func journaledCommitsUseFilesMadeAhead() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        #expect(try manager.startDriveJournal())
        defer { manager.stopDriveJournal(timeout: 5) }
        let pool = try #require(manager.unnamedFiles.withLock { $0 })
        #expect(try waitFor { poolIsFull(pool) })
        let prepared = try manager.prepareDriveFile(named: "a.txt", in: nil, attributes: NodeAttributes(kind: .file))
        let bytes = TemporaryStore.bytes(9_000, seed: 5)
        try bytes.withUnsafeBytes { try prepared.content.write(offset: 0, bytes: $0) }
        _ = try manager.commitDriveFile(prepared.node.id, content: prepared.content, inserting: prepared) { _ in }
        #expect(!poolIsFull(pool))
        manager.drainDriveCommits()
        let export = try #require(try manager.files.nodeFile(prepared.node.id, kind: .data))
        #expect(try decrypt(export) == bytes)
        #expect(manager.stopDriveJournal(timeout: 5))
        #expect(manager.unnamedFiles.withLock { $0 } == nil)
    }

    private func poolIsFull(_ pool: UnnamedFilePool) -> Bool {
        pool.count == UnnamedFilePool.capacity
    }

    private func waitFor(_ condition: () -> Bool) throws -> Bool {
        for _ in 0..<200 {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }
}
