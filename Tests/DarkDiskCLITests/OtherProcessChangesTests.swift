import DarkDiskStore
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// `DiskManager.changes()` reports what other processes did to the store (here the real
/// `darkdisk` binary), as it reports this process' own changes, and this process' own only once.
@Suite(.processSlots) struct OtherProcessChangesTests {
    private struct Event: Hashable, CustomStringConvertible {
        let reason: StoreChange.Reason
        let kind: FileKind
        let ownerID: String
        var description: String { "\(reason.rawValue) \(kind.rawValue) \(ownerID)" }
    }

    @Test func changesMadeByAnotherProcessReachASubscriber() async throws {
        let store = try CLIStore()
        #expect(try await store.darkdisk(["init"]).status == 0)
        let manager = try store.manager()
        let changes = manager.files.changes()

        #expect(try await store.darkdisk(["import", "-", "--node", "t", "--kind", "thumbnail"], stdin: Data("png 1".utf8)).status == 0)
        #expect(try await store.darkdisk(["import", "-", "--node", "t", "--kind", "thumbnail"], stdin: Data("png 2".utf8)).status == 0)
        #expect(try await store.darkdisk(["import", "-", "--node", "d", "--persistent"], stdin: CLIStore.bytes(5000)).status == 0)
        #expect(try await store.darkdisk(["persist", "--node", "d", "off"]).status == 0)
        #expect(try await store.darkdisk(["import", "-", "--user", "u", "--identity", "me@x.org"], stdin: Data("av".utf8)).status == 0)
        #expect(try await store.darkdisk(["delete", "--node", "t"]).status == 0)

        let expected: [Event] = [
            Event(reason: .imported, kind: .thumbnail, ownerID: "t"),
            Event(reason: .imported, kind: .thumbnail, ownerID: "t"),  // the replacement
            Event(reason: .imported, kind: .data, ownerID: "d"),
            Event(reason: .migrated, kind: .data, ownerID: "d"),
            Event(reason: .imported, kind: .avatar, ownerID: "u"),
            Event(reason: .deleted, kind: .thumbnail, ownerID: "t"),
        ]
        // In order; the replacement also deletes the first thumbnail's row, reported as such.
        let seen = try await collectChanges(changes, timeout: 30) { changes in
            Self.isOrderedSubsequence(expected, of: changes.map { Event(reason: $0.reason, kind: $0.kind, ownerID: $0.ownerID) })
        }
        let delivered = try #require(seen, "the other process' changes were not all delivered, in order")
        let avatar = try #require(delivered.first { $0.kind == .avatar })
        #expect(avatar.identityID == "me@x.org" && avatar.pool == .avatars)

        // This process' own import is reported once (directly), not again from the shared log; a later
        // change by the other process shows the log has been read past it.
        _ = try await manager.importNodeFile(DiskImport(cleartextData: Data("own".utf8)), nodeID: NodeID("own"))
        #expect(try await store.darkdisk(["import", "-", "--node", "later"], stdin: Data("x".utf8)).status == 0)
        let after = try #require(try await collectChanges(changes, timeout: 30) { $0.contains { $0.ownerID == "later" } },
                                 "the later change was not delivered")
        #expect(after.filter { $0.ownerID == "own" }.count == 1, "own change reported once: \(after)")
        withExtendedLifetime(manager) {}
    }

    private static func isOrderedSubsequence(_ expected: [Event], of events: [Event]) -> Bool {
        var remaining = events[...]
        for event in expected {
            guard let at = remaining.firstIndex(of: event) else { return false }
            remaining = remaining[(at + 1)...]
        }
        return true
    }
}
