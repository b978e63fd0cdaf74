@testable import DarkDiskStore
@testable import DarkDiskDrive
import Foundation
import Synchronization
import Testing

/// A `creat`'s row waits in memory until the file's first commit takes it (one transaction for both) or a
/// request that reads the index drains it; either way no answer misses a file the kernel was told of, and an
/// insert that cannot land is the commit's error.
@Suite struct PendingCreatesTests {
    /// A fresh store (gone at `remove`) and the mount's queue of rows over it.
    private final class Fixture {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("creates-\(UUID().uuidString)").path
        let manager: DiskManager
        let creates: PendingCreates

        init() throws {
            manager = try DiskManager.create(at: StoreLocation(directory: directory))
            creates = PendingCreates(manager: manager)
        }

        func remove() { try? FileManager.default.removeItem(atPath: directory) }

        /// A new file made as a `creat` makes it, its row waiting in the queue.
        func created(_ name: String, in folder: NodeID? = nil) throws -> PreparedDriveFile {
            let file = try manager.prepareDriveFile(named: name, in: folder, attributes: NodeAttributes(kind: .file, mode: 0o644))
            creates.add(file)
            return file
        }
    }

    @Test func aRowWaitsUntilADrainWritesIt() throws {
        let fixture = try Fixture(), manager = fixture.manager, creates = fixture.creates
        defer { fixture.remove() }
        let file = try fixture.created("a.txt")
        #expect(try manager.driveNode(file.node.id) == nil)
        creates.drain()
        #expect(try manager.driveNode(file.node.id)?.name == "a.txt")
        #expect(try creates.take(file.node.id) == nil, "in the index already: nothing for the commit to insert")
    }

    @Test func aTakenRowHoldsADrainUntilItLands() throws {
        let fixture = try Fixture(), manager = fixture.manager, creates = fixture.creates
        defer { fixture.remove() }
        let file = try fixture.created("b.txt")
        let row = try #require(try creates.take(file.node.id))
        let drained = Flag()
        let thread = Thread { creates.drain(); drained.value.store(true, ordering: .releasing) }
        thread.start()
        Thread.sleep(forTimeInterval: 0.2)
        let early = drained.value.load(ordering: .acquiring)
        #expect(!early, "a drain returned while the file's row was still being written")
        try Data("bytes".utf8).withUnsafeBytes { try row.content.write(offset: 0, bytes: $0) }
        try manager.commitDriveFile(row.node.id, content: row.content, inserting: row)
        creates.finish(row.node.id, putBack: nil, failure: nil)
        let deadline = Date().addingTimeInterval(10)
        while !drained.value.load(ordering: .acquiring), Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        let done = drained.value.load(ordering: .acquiring)
        #expect(done)
        #expect(try manager.driveListing(of: nil).map(\.data?.plaintextSize) == [5])
    }

    @Test func aRowPutBackByAFailedCommitIsDrainedLater() throws {
        let fixture = try Fixture(), manager = fixture.manager, creates = fixture.creates
        defer { fixture.remove() }
        let file = try fixture.created("c.txt")
        let row = try #require(try creates.take(file.node.id))
        creates.finish(row.node.id, putBack: row, failure: nil)
        #expect(try manager.driveNode(file.node.id) == nil)
        creates.drain()
        #expect(try manager.driveNode(file.node.id) != nil)
    }

    @Test func anInsertThatCannotLandIsTheCommitsError() throws {
        let fixture = try Fixture(), manager = fixture.manager, creates = fixture.creates
        defer { fixture.remove() }
        let folder = try manager.createDriveNode(named: "gone", in: nil, attributes: NodeAttributes(kind: .folder))
        let orphan = try fixture.created("late.txt", in: folder.id)
        let fine = try fixture.created("fine.txt")
        try manager.deleteDriveNode(folder.id)
        creates.drain()
        #expect(try manager.driveNode(fine.node.id) != nil, "one row that cannot land does not stop the others")
        #expect(try manager.driveNode(orphan.node.id) == nil)
        let error = #expect(throws: DarkDiskError.self) { _ = try creates.take(orphan.node.id) }
        #expect(error?.code == .notFound)
        creates.forget(orphan.node.id)
        #expect(try creates.take(orphan.node.id) == nil)
    }
}

private final class Flag: Sendable {
    let value = Atomic<Bool>(false)
}
