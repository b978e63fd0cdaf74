@testable import DarkDiskStore
import DarkDiskCrypto
import DarkDiskTestTraits
import DarkDiskSystem
import Foundation
import DarkDiskSync
import GRDB
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The drive's commit journal (`DriveCommitJournal`): a journaled commit returns before the index has it,
/// reaches the index moments later and leaves the journal empty; what a daemon killed before that left in
/// the journal reaches the index at the store's next opening, each record once, and neither a torn last
/// record nor a record whose stored file went stops the others.
@Suite(.ownThreads) struct DriveJournalTests {
    @Test func aJournaledCommitReachesTheIndexAndLeavesTheJournalEmpty() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        #expect(try manager.startDriveJournal())
        let folder = try manager.createDriveNode(named: "docs", in: nil, attributes: NodeAttributes(kind: .folder, mode: 0o755))
        let bytes = TemporaryStore.bytes(70_000, seed: 4)
        let prepared = try manager.prepareDriveFile(named: "a.bin", in: folder.id, attributes: NodeAttributes(kind: .file, mode: 0o600))
        try bytes.withUnsafeBytes { try prepared.content.write(offset: 0, bytes: $0) }
        let outcomes = Outcomes()
        let export = try #require(try manager.commitDriveFile(prepared.node.id, content: prepared.content, inserting: prepared, whenIndexed: outcomes.add))
        // The new version reads at once, from the export the commit hands out.
        #expect(try decrypt(export) == bytes)

        manager.drainDriveCommits()
        #expect(outcomes.indexed == 1)
        // The batch's savepoints journal in memory: a temporary file per transaction (SQLite's default) cost
        // every new inode of the disk's group more while it was freshly deleted (ext4 without a journal).
        #expect(try manager.database.write { try Int.fetchOne($0, sql: "PRAGMA temp_store") } == 2)
        #expect(try manager.database.read { try Int.fetchOne($0, sql: "PRAGMA temp_store") } == 2)
        #expect(try manager.driveNode(prepared.node.id)?.name == "a.bin")
        #expect(try decrypt(try #require(try manager.files.nodeFile(prepared.node.id, kind: .data))) == bytes)
        #expect(try manager.uploadQueue.all().map(\.nodeID).contains(prepared.node.id))
        #expect(try waitFor { fileSize(manager.driveJournalPath) == 0 })

        // Only the journal's writer journals: another instance on the store commits as before.
        let other = try store.open()
        #expect(try !other.startDriveJournal())
        #expect(manager.stopDriveJournal(timeout: 5))
    }

    /// Batches gather for a while (`gathering`), but a full one (`fullBatch` records) is written at once;
    /// fewer wait for their time.
    @Test func aFullBatchIsWrittenAtOnceAndAPartOneWaitsItsGathering() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let batches = Locked<[Int]>([])
        // Gathering longer than the test: only a full batch is written before the test ends.
        let journal = try Self.journalGatheringForever(manager) { count in batches.withLock { $0.append(count) } }
        defer {
            journal.stop()
            manager.driveJournal.withLock { $0 = nil }
        }
        func commit(_ count: Int, from first: Int) throws {
            for index in first..<first + count {
                let prepared = try manager.prepareDriveFile(named: "f\(index)", in: nil, attributes: NodeAttributes(kind: .file, mode: 0o600))
                try Data("file \(index)".utf8).withUnsafeBytes { try prepared.content.write(offset: 0, bytes: $0) }
                _ = try manager.commitDriveFile(prepared.node.id, content: prepared.content, inserting: prepared) { _ in }
            }
        }
        try commit(DriveCommitJournal.fullBatch - 1, from: 0)
        Thread.sleep(forTimeInterval: 0.3)
        #expect(batches.withLock { $0 }.isEmpty, "a part batch waits for its gathering")
        try commit(1, from: DriveCommitJournal.fullBatch - 1)
        #expect(try waitFor { batches.withLock { $0 } == [DriveCommitJournal.fullBatch] }, "\(batches.withLock { $0 })")
        try commit(3, from: DriveCommitJournal.fullBatch)
        Thread.sleep(forTimeInterval: 0.3)
        #expect(batches.withLock { $0 } == [DriveCommitJournal.fullBatch], "the next batch gathers again")
        manager.drainDriveCommits()
        #expect(batches.withLock { $0 } == [DriveCommitJournal.fullBatch, 3], "a drain writes what waits at once")
    }

    /// An `unlink` journaled returns before the index has it: the name waits for the index (a lookup of it
    /// drains first), and the batch takes the node out of the tree and deletes its stored file; a removal
    /// whose node went meanwhile is dropped alone. A folder is not journaled (`EISDIR`).
    @Test func aJournaledRemovalTakesTheNodeAndItsFileWithTheBatch() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let folder = try manager.createDriveNode(named: "docs", in: nil, attributes: NodeAttributes(kind: .folder, mode: 0o755))
        func commitNew(_ name: String) throws -> DriveNode {
            let prepared = try manager.prepareDriveFile(named: name, in: folder.id, attributes: NodeAttributes(kind: .file, mode: 0o600))
            try Data("bytes of \(name)".utf8).withUnsafeBytes { try prepared.content.write(offset: 0, bytes: $0) }
            _ = try manager.commitDriveFile(prepared.node.id, content: prepared.content, inserting: prepared) { _ in }
            return try #require(try manager.driveNode(prepared.node.id))
        }
        let kept = try commitNew("kept.txt"), gone = try commitNew("gone.txt"), raced = try commitNew("raced.txt")
        let stored = try #require(try manager.files.nodeFile(gone.id, kind: .data)).retainToken.path
        let journal = try Self.journalGatheringForever(manager)
        defer {
            journal.stop()
            manager.driveJournal.withLock { $0 = nil }
        }
        #expect(throws: DarkDiskError.self) { try manager.journalDriveRemoval(folder) }
        #expect(try manager.journalDriveRemoval(gone))
        #expect(try manager.journalDriveRemoval(raced))
        // Waiting: the names are noted, the index still has the nodes.
        #expect(manager.hasPendingDriveCommit(named: "gone.txt", in: folder.id))
        #expect(!manager.hasPendingDriveCommit(named: "kept.txt", in: folder.id))
        #expect(try manager.driveNode(gone.id) != nil)
        // A delete drains first: both removals land, and it finds nothing left to delete.
        #expect(throws: DarkDiskError.self) { try manager.deleteDriveNode(raced.id) }
        #expect(!manager.hasPendingDriveCommit(named: "gone.txt", in: folder.id))
        #expect(try manager.driveNode(gone.id) == nil)
        #expect(try manager.driveChildren(of: folder.id).map(\.name) == ["kept.txt"])
        #expect(try manager.files.nodeFile(gone.id, kind: .data) == nil)
        #expect(access(stored, F_OK) != 0, "its stored file went")
        #expect(try manager.driveNode(kept.id) != nil)
        #expect(try manager.check().problems.isEmpty)
    }

    /// A removal a killed daemon journaled reaches the index at the next opening.
    @Test func aRemovalAKilledDaemonJournaledLandsAtTheNextOpening() throws {
        let store = try TemporaryStore()
        // (The daemon's instance goes before the next opening, as a killed daemon's does.)
        let node = try Self.journalRemovalWithoutIndex(store)
        let reopened = try store.open()
        #expect(try reopened.driveNode(node.id) == nil)
        #expect(try reopened.driveChildren(of: nil).isEmpty)
        #expect(fileSize(reopened.driveJournalPath) == 0)
        let pending = try reopened.database.read { try String.fetchAll($0, sql: "SELECT path FROM pendingDelete") }
        #expect(try storedFileCount(store) == 0, "pending: \(pending)")
        #expect(try reopened.check().problems.isEmpty)
    }

    /// A store with a file whose removal a daemon journaled and the index never took; the file's node.
    private static func journalRemovalWithoutIndex(_ store: TemporaryStore) throws -> DriveNode {
        let manager = try store.create()
        let prepared = try manager.prepareDriveFile(named: "doomed", in: nil, attributes: NodeAttributes(kind: .file, mode: 0o600))
        try Data("x".utf8).withUnsafeBytes { try prepared.content.write(offset: 0, bytes: $0) }
        _ = try manager.commitDriveFile(prepared.node.id, content: prepared.content, inserting: prepared) { _ in }
        let node = try #require(try manager.driveNode(prepared.node.id))
        manager.files.maintenanceQueue.sync {}
        let fd = open(manager.driveJournalPath, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        try #require(try SystemCall.tryLock(fd, .exclusive))
        let journal = DriveCommitJournal(path: manager.driveJournalPath, descriptor: OwnedDescriptor(owning: fd), after: 0, apply: { _ throws(DarkDiskError) in
            throw DarkDiskError(.io, "the index is not written in this test")
        }, logger: { _ in })
        manager.driveJournal.withLock { $0 = journal }
        #expect(try manager.journalDriveRemoval(node))
        journal.stop()
        manager.driveJournal.withLock { $0 = nil }
        #expect(try manager.driveNode(node.id) != nil, "the index never took it")
        return node
    }

    /// A journal for `manager` whose batches gather for ten minutes (only a full batch or a drain writes
    /// one), made its drive journal; `batch` hears each batch's size before it is written.
    static func journalGatheringForever(_ manager: DiskManager, batch: @escaping @Sendable (Int) -> Void = { _ in }) throws -> DriveCommitJournal {
        manager.files.maintenanceQueue.sync {}
        let fd = open(manager.driveJournalPath, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        try #require(try SystemCall.tryLock(fd, .exclusive))
        let journal = DriveCommitJournal(path: manager.driveJournalPath, descriptor: OwnedDescriptor(owning: fd), after: 0, gathering: .seconds(600), apply: { [weak manager] pending throws(DarkDiskError) in
            batch(pending.count)
            guard let manager else { throw DarkDiskError(.io, "the store was closed") }
            return try manager.applyDriveCommits(pending)
        }, logger: { _ in })
        manager.driveJournal.withLock { $0 = journal }
        return journal
    }

    /// A record waiting for the index holds no descriptor (a burst of small files exhausted the daemon's
    /// descriptors when each did): once its version's last holder lets go, the record alone keeps another
    /// process's orphan sweep from taking the version, which the index then takes as usual.
    @Test func aWaitingRecordHoldsNoDescriptorAndNoSweepTakesItsVersion() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        // Gathering longer than the test: the record waits until the drain below.
        let journal = try Self.journalGatheringForever(manager)
        defer {
            journal.stop()
            manager.driveJournal.withLock { $0 = nil }
        }
        let bytes = TemporaryStore.bytes(5_000, seed: 8)
        var stored = ""
        let id: NodeID
        do {
            let prepared = try manager.prepareDriveFile(named: "kept.bin", in: nil, attributes: NodeAttributes(kind: .file, mode: 0o600))
            id = prepared.node.id
            try bytes.withUnsafeBytes { try prepared.content.write(offset: 0, bytes: $0) }
            let export = try #require(try manager.commitDriveFile(prepared.node.id, content: prepared.content, inserting: prepared) { _ in })
            stored = export.retainToken.path
        }
        #expect(manager.hasPendingDriveCommit(id))
        let open = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").filter {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == stored
        }
        #expect(open.isEmpty, "descriptors still open on the waiting version: \(open)")
        let other = try store.open()
        #expect(other.files.removeOrphan(stored) != .removed)
        #expect(FileManager.default.fileExists(atPath: stored))
        manager.drainDriveCommits()
        #expect(other.files.removeOrphan(stored) == .notOrphan)
        #expect(try decrypt(try #require(try other.files.nodeFile(id, kind: .data))) == bytes)
    }

    @Test func whatAKilledDaemonJournaledReachesTheIndexAtTheNextOpening() throws {
        let store = try TemporaryStore()
        let (first, second, journalBytes) = try journalWithoutIndex(store)
        // (A killed daemon: its records are in the journal, not in the index.)
        #expect(journalBytes.count > 0)

        let reopened = try store.open()
        let node = try #require(try reopened.driveNode(first.id))
        #expect(node.name == "first.txt")
        #expect(node.attributes.mode == 0o640)
        #expect(try decrypt(try #require(try reopened.files.nodeFile(first.id, kind: .data))) == first.latest)
        #expect(try decrypt(try #require(try reopened.files.nodeFile(second.id, kind: .data))) == second.latest)
        #expect(Set(try reopened.uploadQueue.all().map(\.nodeID)).isSuperset(of: [first.id, second.id]))
        #expect(fileSize(reopened.driveJournalPath) == 0)
        // The first version of the rewritten file went with its replacement.
        #expect(try storedFileCount(store) == 2)
        #expect(try reopened.check().problems.isEmpty)
    }

    @Test func aReplayWritesEachRecordOnce() throws {
        let store = try TemporaryStore()
        let (first, _, journalBytes) = try journalWithoutIndex(store)
        let replayed = try store.open()
        #expect(try decrypt(try #require(try replayed.files.nodeFile(first.id, kind: .data))) == first.latest)

        // A newer version committed the ordinary way; the old records put back in the journal (as if its
        // emptying had not happened) are not written again over it.
        let newest = TemporaryStore.bytes(3_000, seed: 99)
        let content = try replayed.stagedContent(for: first.id, base: nil, isNew: true)
        try newest.withUnsafeBytes { try content.write(offset: 0, bytes: $0) }
        try replayed.commitDriveFile(first.id, content: content)
        try Data(journalBytes).write(to: URL(fileURLWithPath: replayed.driveJournalPath))

        let again = try store.open()
        #expect(try decrypt(try #require(try again.files.nodeFile(first.id, kind: .data))) == newest)
        #expect(fileSize(again.driveJournalPath) == 0)
        #expect(try again.check().problems.isEmpty)
    }

    @Test func aTornLastRecordAndAVanishedFileStopNoOtherRecord() throws {
        let store = try TemporaryStore()
        let (first, second, journalBytes) = try journalWithoutIndex(store)
        // The second file's stored version removed by hand, and half a record after the last whole one.
        try FileManager.default.removeItem(atPath: second.storedPath)
        let torn = journalBytes + Array(journalBytes.prefix(20))
        try Data(torn).write(to: URL(fileURLWithPath: store.location.dataDirectory + "/drive-commits.journal"))

        let reopened = try store.open()
        #expect(try decrypt(try #require(try reopened.files.nodeFile(first.id, kind: .data))) == first.latest)
        #expect(try reopened.driveNode(second.id) == nil)
        #expect(fileSize(reopened.driveJournalPath) == 0)
        #expect(try reopened.check().problems.isEmpty)
    }

    /// A daemon starting while another process's opening holds the journal a moment (looking for what to
    /// replay) still journals, once that lets go; one that finds it held for good does not.
    @Test func aDaemonWaitsOutAReplayBeforeItJournals() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let fd = open(manager.driveJournalPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        try #require(try SystemCall.tryLock(fd, .exclusive))
        let released = DispatchSemaphore(value: 0)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) {
            close(fd)
            released.signal()
        }
        #expect(try manager.startDriveJournal())
        released.wait()
        #expect(manager.stopDriveJournal(timeout: 5))

        let holder = try store.open()
        #expect(try holder.startDriveJournal())
        #expect(try !manager.startDriveJournal())
        #expect(holder.stopDriveJournal(timeout: 5))
    }

    /// A process that had the store open before the daemon was killed (a `darkdisk sync`, a library user)
    /// found the journaled versions locked; once their daemon is gone, its orphan check replays the journal
    /// before it removes anything, and the versions land instead of going.
    @Test func anOrphanCheckAfterTheDaemonDiedReplaysTheJournalFirst() throws {
        let store = try TemporaryStore()
        let earlier = try store.create()
        let (first, second, _) = try journalWithoutIndex(store, keepingFilesLocked: true) { written in
            // While the daemon lives, its versions are locked: not orphans to remove.
            #expect(earlier.files.removeOrphan(written.storedPath) == .locked)
        }
        // The daemon is gone (its journal and locks with it): the check replays the journal, so the versions
        // are not removed, and the next check finds them in the index.
        #expect(earlier.files.removeOrphan(first.storedPath) != .removed)
        #expect(earlier.files.removeOrphan(second.storedPath) == .notOrphan)
        #expect(earlier.files.removeOrphan(first.storedPath) == .notOrphan)
        #expect(try decrypt(try #require(try earlier.files.nodeFile(first.id, kind: .data))) == first.latest)
        #expect(try decrypt(try #require(try earlier.files.nodeFile(second.id, kind: .data))) == second.latest)
    }

    /// A new folder or link waits for the journal only when a waiting record makes its name in its folder:
    /// then the name is taken (`exists`); any other name is made at once, the journal still waiting.
    @Test func aNewFolderWaitsForTheJournalOnlyForItsOwnName() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let folder = try manager.createDriveNode(named: "docs", in: nil, attributes: NodeAttributes(kind: .folder))
        let (gate, journal) = try gatedJournal(manager)
        defer { release(gate, journal, of: manager) }
        let pending = try manager.prepareDriveFile(named: "taken", in: folder.id, attributes: NodeAttributes(kind: .file))
        _ = try manager.commitDriveFile(pending.node.id, content: pending.content, inserting: pending) { _ in }
        #expect(manager.hasPendingDriveCommit(named: "taken", in: folder.id))

        let folderID = folder.id
        func makeFolder(named name: String) -> (finished: DispatchSemaphore, result: Locked<Result<DriveNode, DarkDiskError>?>) {
            inBackground { () throws(DarkDiskError) in try manager.createDriveNode(named: name, in: folderID, attributes: NodeAttributes(kind: .folder)) }
        }
        // Another name: made while the record still waits.
        let other = makeFolder(named: "other")
        #expect(other.finished.wait(timeout: .now() + 10) == .success)
        #expect(manager.hasPendingDriveCommit(named: "taken", in: folder.id))
        // (The record lets go, and the gate closes again behind it.)
        gate.signal()
        gate.wait()
        let made = try #require(try other.result.withLock({ $0 })?.get())
        #expect(try manager.driveNode(made.id)?.name == "other")

        // The waiting record's name: refused once the record is in (not a second node of that name).
        let more = try manager.prepareDriveFile(named: "taken2", in: folder.id, attributes: NodeAttributes(kind: .file))
        _ = try manager.commitDriveFile(more.node.id, content: more.content, inserting: more) { _ in }
        let taken = makeFolder(named: "taken2")
        #expect(taken.finished.wait(timeout: .now() + 0.3) == .timedOut)
        gate.signal()
        #expect(taken.finished.wait(timeout: .now() + 10) == .success)
        let error = #expect(throws: DarkDiskError.self) { _ = try taken.result.withLock({ $0 })?.get() }
        #expect(error?.code == .exists)
        #expect(try manager.driveChildren(of: folder.id, named: "taken2").map(\.id) == [more.node.id])
        #expect(try manager.driveChildren(of: folder.id, named: "taken").map(\.id) == [pending.node.id])
    }

    /// An attribute change (`chmod`, `touch` of a file not open, a folder's mode and time) waits for the
    /// journal only when a waiting record is its node's: then it lands after that record, not under it.
    @Test func anAttributeChangeWaitsForTheJournalOnlyForItsOwnNode() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let folder = try manager.createDriveNode(named: "docs", in: nil, attributes: NodeAttributes(kind: .folder, mode: 0o755))
        let (gate, journal) = try gatedJournal(manager)
        defer { release(gate, journal, of: manager) }
        let pending = try manager.prepareDriveFile(named: "a.txt", in: folder.id, attributes: NodeAttributes(kind: .file, mode: 0o600))
        #expect(pending.content.deferAttributes(mode: 0o640, modified: nil))
        _ = try manager.commitDriveFile(pending.node.id, content: pending.content, inserting: pending) { _ in }
        #expect(manager.hasPendingDriveCommit(pending.node.id))

        // Another node's: changed while the record waits.
        let folderID = folder.id, fileID = pending.node.id
        let other = inBackground { () throws(DarkDiskError) in
            try manager.updateDriveAttributes(folderID) { $0.mode = 0o700 }
        }
        #expect(other.finished.wait(timeout: .now() + 10) == .success)
        #expect(manager.hasPendingDriveCommit(pending.node.id))
        #expect(try other.result.withLock({ $0 })?.get().mode == 0o700)

        // The waiting record's node: changed once the record is in, so the change is what stays.
        let own = inBackground { () throws(DarkDiskError) in
            try manager.updateDriveAttributes(fileID) { $0.mode = 0o444 }
        }
        #expect(own.finished.wait(timeout: .now() + 0.3) == .timedOut)
        gate.signal()
        #expect(own.finished.wait(timeout: .now() + 10) == .success)
        #expect(try own.result.withLock({ $0 })?.get().mode == 0o444)
        #expect(try manager.driveNode(pending.node.id)?.attributes.mode == 0o444)
        #expect(try manager.driveNode(folder.id)?.attributes.mode == 0o700)
    }

    /// A record whose node another process deleted while it waited is dropped alone, its stored file removed;
    /// the records before and after it in the same batch land (the batch is written again, each record in a
    /// savepoint of its own).
    @Test func aRecordWhoseNodeWentIsDroppedAloneInItsBatch() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let folder = try manager.createDriveNode(named: "docs", in: nil, attributes: NodeAttributes(kind: .folder))
        let (doomed, content) = try manager.createDriveFile(named: "doomed.txt", in: folder.id, attributes: NodeAttributes(kind: .file))
        try TemporaryStore.bytes(2_000, seed: 7).withUnsafeBytes { try content.write(offset: 0, bytes: $0) }
        try manager.commitDriveFile(doomed.id, content: content)

        let (gate, journal) = try gatedJournal(manager)
        defer { release(gate, journal, of: manager) }
        let outcomes = Outcomes()
        func commitNew(_ name: String, seed: UInt64) throws -> (NodeID, Data) {
            let prepared = try manager.prepareDriveFile(named: name, in: folder.id, attributes: NodeAttributes(kind: .file))
            let bytes = TemporaryStore.bytes(3_000, seed: seed)
            try bytes.withUnsafeBytes { try prepared.content.write(offset: 0, bytes: $0) }
            _ = try manager.commitDriveFile(prepared.node.id, content: prepared.content, inserting: prepared, whenIndexed: outcomes.add)
            return (prepared.node.id, bytes)
        }
        let first = try commitNew("first.txt", seed: 1)
        let rewrite = try manager.stagedContent(for: doomed.id, base: nil, isNew: true)
        try TemporaryStore.bytes(4_000, seed: 8).withUnsafeBytes { try rewrite.write(offset: 0, bytes: $0) }
        let doomedVersion = try #require(try manager.commitDriveFile(doomed.id, content: rewrite, whenIndexed: outcomes.add))
        let third = try commitNew("third.txt", seed: 3)

        // Another process deletes the file whose new version waits.
        try store.open().deleteDriveNode(doomed.id)
        gate.signal()
        manager.drainDriveCommits()
        #expect(outcomes.indexed == 2)
        #expect(outcomes.dropped == 1)
        for (id, bytes) in [first, third] {
            #expect(try decrypt(try #require(try manager.files.nodeFile(id, kind: .data))) == bytes)
        }
        #expect(try manager.driveNode(doomed.id) == nil)
        #expect(!FileManager.default.fileExists(atPath: doomedVersion.retainToken.path))
        #expect(try manager.check().problems.isEmpty)
    }

    /// A mount's store watcher reads the index's changes without the rows its own journaled commits wrote
    /// (the kernel has those from the requests that made them; dropping every name a `tar x` had just made
    /// cost the requests meanwhile 7–16 % of their time), and with every other: another instance's, this
    /// instance's outside the journal, and a new file whose folder was deleted before its record landed
    /// (it shows at the top, which the kernel must be told of).
    @Test func theWatchersViewSkipsOnlyThisInstancesJournaledCommits() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let folder = try manager.createDriveNode(named: "docs", in: nil, attributes: NodeAttributes(kind: .folder, mode: 0o755))
        let doomedFolder = try manager.createDriveNode(named: "doomed", in: nil, attributes: NodeAttributes(kind: .folder, mode: 0o755))
        let (gate, journal) = try gatedJournal(manager)
        defer { release(gate, journal, of: manager) }
        let start = try manager.newestEntryChange()
        let outcomes = Outcomes()
        func commitNew(_ name: String, in parent: NodeID) throws -> NodeID {
            let prepared = try manager.prepareDriveFile(named: name, in: parent, attributes: NodeAttributes(kind: .file, mode: 0o644))
            try TemporaryStore.bytes(3_000, seed: UInt64(name.utf8.count)).withUnsafeBytes { try prepared.content.write(offset: 0, bytes: $0) }
            _ = try manager.commitDriveFile(prepared.node.id, content: prepared.content, inserting: prepared, whenIndexed: outcomes.add)
            return prepared.node.id
        }
        let made = try (0..<5).map { try commitNew("f\($0)", in: folder.id) }
        let orphan = try commitNew("orphan", in: doomedFolder.id)
        // Another process deletes the orphan's folder before its record lands (it was empty in the index).
        try store.open().deleteDriveNode(doomedFolder.id)
        gate.signal()
        manager.drainDriveCommits()
        #expect(outcomes.indexed == 6)

        let seen = try manager.entryChanges(after: start, skippingOwnCommits: true)
        #expect(seen.changes == [.node(doomedFolder.id), .node(orphan)], "\(seen.changes)")
        // (Apart, for the ID view, which the mount's requests in `/files` did not touch; with their folder,
        // whose times they moved.)
        #expect(seen.ownCommits == Set(made + [folder.id]), "\(seen.ownCommits)")
        // Another process reads every row.
        let all = try store.open().entryChanges(after: start)
        #expect(Set((made + [orphan, doomedFolder.id]).map(EntryChange.node)).isSubset(of: all.changes))
        #expect(all.newest == seen.newest)
        // Read past, the rows are forgotten; later changes are seen, another process's and this one's own
        // outside the journal.
        #expect(manager.ownCommitChanges.withLock { $0.batches.isEmpty })
        try store.open().moveDriveNode(made[0], to: "renamed", in: folder.id)
        try manager.moveDriveNode(made[1], to: "moved", in: nil)
        let next = try manager.entryChanges(after: seen.newest, skippingOwnCommits: true)
        #expect(next.changes.isSuperset(of: [.node(made[0]), .node(made[1])]), "\(next.changes)")
    }

    // MARK: Helpers

    /// A journal for `manager` whose index side waits for the test's word: each batch passes once the
    /// returned semaphore is signalled (and signals it again behind it).
    private func gatedJournal(_ manager: DiskManager) throws -> (DispatchSemaphore, DriveCommitJournal) {
        let gate = DispatchSemaphore(value: 0)
        let fd = open(manager.driveJournalPath, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        // (Held as a daemon holds it: another instance's opening leaves its records alone.)
        try #require(try SystemCall.tryLock(fd, .exclusive))
        let journal = DriveCommitJournal(path: manager.driveJournalPath, descriptor: OwnedDescriptor(owning: fd), after: 0, apply: { [weak manager] batch throws(DarkDiskError) in
            gate.wait()
            gate.signal()
            guard let manager else { throw DarkDiskError(.io, "the store was closed") }
            return try manager.applyDriveCommits(batch)
        }, logger: { _ in })
        manager.driveJournal.withLock { $0 = journal }
        return (gate, journal)
    }

    /// Opens a gated journal's gate for good and stops it (a test's last word).
    private func release(_ gate: DispatchSemaphore, _ journal: DriveCommitJournal, of manager: DiskManager) {
        gate.signal()
        journal.stop()
        manager.driveJournal.withLock { $0 = nil }
    }

    /// Runs `body` on a thread of its own: a call that waited for a gated journal would wait for the gate.
    private func inBackground<T: Sendable>(_ body: @escaping @Sendable () throws(DarkDiskError) -> T)
        -> (finished: DispatchSemaphore, result: Locked<Result<T, DarkDiskError>?>) {
        let finished = DispatchSemaphore(value: 0)
        let result = Locked<Result<T, DarkDiskError>?>(nil)
        DispatchQueue.global().async {
            let outcome = Result { () throws(DarkDiskError) in try body() }
            result.withLock { $0 = outcome }
            finished.signal()
        }
        return (finished, result)
    }

    struct Written {
        let id: NodeID
        let latest: Data
        let storedPath: String
    }

    /// A store whose journal holds commits the index never took, as a daemon killed at once would leave it:
    /// a new file committed twice (its mode changed before the second), and another new file. The instance
    /// journals with an index that refuses every batch, then stops; the journal's bytes.
    private func journalWithoutIndex(_ store: TemporaryStore, keepingFilesLocked: Bool = false,
                                     whileAlive: (Written) throws -> Void = { _ in }) throws -> (Written, Written, [UInt8]) {
        let manager = DiskManager.exists(at: store.location) ? try store.open() : try store.create()
        // The opening's orphan sweep (on the maintenance queue) ends first: later, on a loaded machine, it
        // found the files below unknown and unlocked once the journal stopped, and replayed the journal itself.
        manager.files.maintenanceQueue.sync {}
        let path = manager.driveJournalPath
        let fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        try #require(try SystemCall.tryLock(fd, .exclusive))
        let journal = DriveCommitJournal(path: path, descriptor: OwnedDescriptor(owning: fd), after: 0, apply: { _ throws(DarkDiskError) in
            throw DarkDiskError(.io, "the index is not written in this test")
        }, logger: { _ in })
        manager.driveJournal.withLock { $0 = journal }

        let one = try manager.prepareDriveFile(named: "first.txt", in: nil, attributes: NodeAttributes(kind: .file, mode: 0o600))
        let v1 = TemporaryStore.bytes(5_000, seed: 1), v2 = TemporaryStore.bytes(90_000, seed: 2)
        try v1.withUnsafeBytes { try one.content.write(offset: 0, bytes: $0) }
        _ = try manager.commitDriveFile(one.node.id, content: one.content, inserting: one) { _ in }
        try v2.withUnsafeBytes { try one.content.write(offset: 0, bytes: $0) }
        #expect(one.content.deferAttributes(mode: 0o640, modified: nil))
        let oneExport = try #require(try manager.commitDriveFile(one.node.id, content: one.content) { _ in })

        let two = try manager.prepareDriveFile(named: "second.txt", in: nil, attributes: NodeAttributes(kind: .file))
        let w = TemporaryStore.bytes(1_234, seed: 3)
        try w.withUnsafeBytes { try two.content.write(offset: 0, bytes: $0) }
        let twoExport = try #require(try manager.commitDriveFile(two.node.id, content: two.content, inserting: two) { _ in })

        #expect(try manager.driveNode(one.node.id) == nil)
        #expect(try manager.driveNode(two.node.id) == nil)
        let written = (Written(id: one.node.id, latest: v2, storedPath: oneExport.retainToken.path),
                       Written(id: two.node.id, latest: w, storedPath: twoExport.retainToken.path))
        if keepingFilesLocked {
            try whileAlive(written.0)
            try whileAlive(written.1)
        }
        journal.stop()
        manager.driveJournal.withLock { $0 = nil }
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(DriveCommitRecord.records(in: bytes).records.map(\.sequence) == [1, 2, 3])
        return (written.0, written.1, bytes)
    }

    private func fileSize(_ path: String) -> Int {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : -1
    }

    private func storedFileCount(_ store: TemporaryStore) throws -> Int {
        let root = store.location.persistentFiles
        return try FileManager.default.subpathsOfDirectory(atPath: root).filter { $0.hasSuffix(".ddf") }.count
    }

    private func waitFor(_ condition: () -> Bool) throws -> Bool {
        for _ in 0..<200 {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    final class Outcomes: Sendable {
        private let counts = Locked<(indexed: Int, dropped: Int)>((0, 0))
        var indexed: Int { counts.withLock { $0.indexed } }
        var dropped: Int { counts.withLock { $0.dropped } }

        @Sendable func add(_ outcome: DriveCommitOutcome) {
            counts.withLock { counts in
                if case .indexed = outcome { counts.indexed += 1 } else { counts.dropped += 1 }
            }
        }
    }
}
