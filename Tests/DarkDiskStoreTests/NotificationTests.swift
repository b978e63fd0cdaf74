import DarkDiskStore
import DarkDiskTestSupport
import Foundation
import Testing

/// `changes(in:)` reports imports, deletes, evictions, migrations and expiries with the
/// right owner, and a subscription to one pool does not see another pool's changes.
@Suite struct NotificationTests {
    private struct Event: Hashable, CustomStringConvertible {
        let reason: StoreChange.Reason
        let ownerID: String
        var description: String { "\(reason.rawValue) \(ownerID)" }
    }

    @Test func dataPoolChangesAreReported() async throws {
        let store = try TemporaryStore()
        let clock = ManualClock()
        let manager = try store.create(clock: clock)
        let data = manager.files.changes(in: .data)
        let thumbnails = manager.files.changes(in: .thumbnails)

        try importFile(manager, "imp")
        try await manager.deleteNode(NodeID("imp"))
        try importFile(manager, "exp", expiration: 0.2)
        try importFile(manager, "mig", persistent: true)
        try await manager.files.makeNodeFilePersistent(false, nodeID: NodeID("mig"))
        try importFile(manager, "ev")
        clock.advance(by: 0.3)
        try manager.files.expireFiles() // (unless the maintenance timer was first: the change is reported either way)
        try manager.files.setMaxSize(0, for: .data) // evicts "ev" and the now-cached "mig"
        try importFile(manager, "t", size: 500, kind: .thumbnail)

        let expected: Set<Event> = [
            Event(reason: .imported, ownerID: "imp"), Event(reason: .deleted, ownerID: "imp"),
            Event(reason: .imported, ownerID: "exp"), Event(reason: .expired, ownerID: "exp"),
            Event(reason: .imported, ownerID: "mig"), Event(reason: .migrated, ownerID: "mig"),
            Event(reason: .imported, ownerID: "ev"), Event(reason: .evicted, ownerID: "ev"),
        ]
        let seen = try await collectChanges(data) { changes in
            expected.isSubset(of: Set(changes.map { Event(reason: $0.reason, ownerID: $0.ownerID) }))
        }
        let changes = try #require(seen, "timed out waiting for the data pool's changes")
        let events = changes.map { Event(reason: $0.reason, ownerID: $0.ownerID) }
        #expect(expected.isSubset(of: Set(events)), "got \(events)")
        #expect(changes.allSatisfy { $0.pool == .data && $0.kind == .data && $0.identityID.isEmpty })
        #expect(events.firstIndex(of: Event(reason: .imported, ownerID: "imp"))! < events.firstIndex(of: Event(reason: .deleted, ownerID: "imp"))!,
                "changes arrive in order")
        #expect(!events.contains { $0.ownerID == "t" }, "the thumbnail import is not a data-pool change")

        // The thumbnails subscription saw none of the above, only its own import.
        let thumbnailChanges = try #require(try await collectChanges(thumbnails) { !$0.isEmpty }, "timed out waiting for the thumbnail import")
        #expect(thumbnailChanges.count == 1)
        let first = try #require(thumbnailChanges.first)
        #expect(first.pool == .thumbnails && first.kind == .thumbnail && first.ownerID == "t" && first.reason == .imported,
                "a .thumbnails subscription does not see data-pool changes (first was \(first))")
    }

    @Test func avatarChangesCarryUserAndIdentity() async throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let all = manager.files.changes()
        try await manager.importUserAvatar(DiskImport(cleartextData: Data("a".utf8)), userID: UserID("u"), identityID: IdentityID("google|1"))
        try manager.files.deleteUserAvatars(forUsers: [UserID("u")])
        let changes = try #require(try await collectChanges(all) { $0.count >= 2 }, "timed out waiting for avatar changes")
        #expect(changes.map(\.reason) == [.imported, .deleted])
        #expect(changes.allSatisfy { $0.pool == .avatars && $0.kind == .avatar && $0.ownerID == "u" && $0.identityID == "google|1" })
    }

    @Test func timerExpiryAndPurgedFilesAreReported() async throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let data = manager.files.changes(in: .data)
        try importFile(manager, "timed", expiration: 1)
        try importFile(manager, "purged")
        try FileManager.default.removeItem(atPath: store.location.cacheDirectory + "/files")
        try importFile(manager, "timed", expiration: 1) // re-import after the purge, expires by the timer
        await #expect(try manager.files.nodeFile(NodeID("purged")) == nil)
        // Both, in whichever order they are delivered.
        let seen = try await collectChanges(data, timeout: 30) { changes in
            changes.contains { $0.reason == .expired && $0.ownerID == "timed" } && changes.contains { $0.reason == .vanished && $0.ownerID == "purged" }
        }
        let changes = try #require(seen, "the timer's expiry and the purged file's vanishing were not both reported")
        #expect(changes.contains { $0.reason == .vanished && $0.ownerID == "purged" }, "a purged cache file is reported as vanished")
        withExtendedLifetime(manager) {}
    }
}
