import DarkDiskStore
import DarkDiskTestSupport
import Foundation
import Testing

/// Per-file expiration (0 = pool default, < 0 = never, > 0 = seconds), no export past expiry, deletion by
/// the maintenance timer without any call, and no expiry for persistent files. Time moves by a manual clock,
/// except for the timer's own test.
@Suite struct ExpirationTests {
    @Test func zeroUsesThePoolDefaultAndNegativeNeverExpires() async throws {
        let store = try TemporaryStore()
        let clock = ManualClock()
        let manager = try store.create(clock: clock)
        try manager.files.setDefaultExpiration(1, for: .data)
        try importFile(manager, "default", expiration: 0)
        try importFile(manager, "never", expiration: -1)
        try importFile(manager, "long", expiration: 3_600)
        #expect(try manager.files.hasNodeFile(NodeID("default")), "not expired yet")
        clock.advance(by: 1.2)

        #expect(try !manager.files.hasNodeFile(NodeID("default")), "0 takes the pool default of 1 s")
        await #expect(try manager.files.nodeFile(NodeID("default")) == nil)
        let never = try await #require(try manager.files.nodeFile(NodeID("never")), "a negative expiration never expires")
        #expect(try decrypt(never) == contents("never"))
        await #expect(try manager.files.nodeFile(NodeID("long")) != nil, "a per-file expiration overrides a shorter pool default")
    }

    @Test func positiveExpirationOverridesANeverExpiringPool() async throws {
        let store = try TemporaryStore()
        let clock = ManualClock()
        let manager = try store.create(clock: clock)
        #expect(try manager.files.settings(for: .data).defaultExpiration == 0, "data files do not expire by default")
        let path = try importFile(manager, "short", expiration: 1).path
        try importFile(manager, "default", expiration: 0)
        await #expect(try manager.files.nodeFile(NodeID("short")) != nil)
        clock.advance(by: 1.2)

        #expect(try !manager.files.hasNodeFile(NodeID("short")), "past its expiry a file is not local")
        await #expect(try manager.files.nodeFile(NodeID("short")) == nil, "past its expiry a file is never exported")
        await #expect(try manager.files.storedFile(NodeID("short")) == nil, "the export attempt drops the expired file")
        #expect(!fileExists(path))
        await #expect(try manager.files.nodeFile(NodeID("default")) != nil, "0 with a pool default of 0 never expires")
    }

    @Test func maintenanceTimerDeletesExpiredFilesWithoutAnyCall() async throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        #expect(StoreFiles.maintenanceInterval == 2)
        let expiring = try importFile(manager, "gone", expiration: 1).path
        let staying = try importFile(manager, "kept", expiration: -1).path
        // Only look at the disk: no store call may trigger the expiry.
        let deleted = await eventually(within: 60) { !fileExists(expiring) }
        #expect(deleted, "the maintenance timer deletes an expired file from disk")
        #expect(fileExists(staying))
        await #expect(try manager.files.storedFile(NodeID("gone")) == nil, "and removes its index row")
        #expect(try poolStatus(manager, .data).fileCount == 1)
        withExtendedLifetime(manager) {}
    }

    @Test func persistentFilesNeverExpire() async throws {
        let store = try TemporaryStore()
        let clock = ManualClock()
        let manager = try store.create(clock: clock)
        try manager.files.setDefaultExpiration(1, for: .data)
        try importFile(manager, "p-own", persistent: true, expiration: 1)
        try importFile(manager, "p-default", persistent: true, expiration: 0)
        clock.advance(by: 1.2)
        #expect(try manager.files.expireFiles() == 0)
        #expect(try manager.files.hasNodeFile(NodeID("p-own")))
        await #expect(try decrypt(try #require(try manager.files.nodeFile(NodeID("p-own")))) == contents("p-own"))
        await #expect(try decrypt(try #require(try manager.files.nodeFile(NodeID("p-default")))) == contents("p-default"))
    }

    @Test func loweringThePoolDefaultExpiresOldFilesAtOnce() async throws {
        let store = try TemporaryStore()
        let clock = ManualClock()
        let manager = try store.create(clock: clock)
        let path = try importFile(manager, "old").path
        try importFile(manager, "pinned", expiration: -1)
        clock.advance(by: 1.1)
        try manager.files.setDefaultExpiration(1, for: .data)
        #expect(!fileExists(path), "setting a default the file is already past deletes it")
        await #expect(try manager.files.storedFile(NodeID("old")) == nil)
        await #expect(try manager.files.storedFile(NodeID("pinned")) != nil)
    }

    @Test func migratingToPersistentStopsExpiry() async throws {
        let store = try TemporaryStore()
        let clock = ManualClock()
        let manager = try store.create(clock: clock)
        try importFile(manager, "m", expiration: 1)
        try await manager.files.makeNodeFilePersistent(true, nodeID: NodeID("m"))
        clock.advance(by: 1.2)
        #expect(try manager.files.expireFiles() == 0)
        await #expect(try decrypt(try #require(try manager.files.nodeFile(NodeID("m")))) == contents("m"))
    }

    @Test func expiredAvatarsAreNotLocal() async throws {
        let store = try TemporaryStore()
        let clock = ManualClock()
        let manager = try store.create(clock: clock)
        let user = try UserID("u")
        try manager.files.setDefaultExpiration(1, for: .avatars)
        try await manager.importUserAvatar(DiskImport(cleartextData: Data("old".utf8)), userID: user, identityID: IdentityID("a"))
        var pinned = DiskImport(cleartextData: Data("pinned".utf8))
        pinned.expiration = -1
        try await manager.importUserAvatar(pinned, userID: user, identityID: IdentityID("b"))
        clock.advance(by: 1.2)
        #expect(try !manager.files.hasUserAvatar(user, identityID: IdentityID("a")))
        await #expect(try manager.files.userAvatar(user, identityID: IdentityID("a")) == nil)
        await #expect(try decrypt(try #require(try manager.files.userAvatar(user))) == Data("pinned".utf8),
                "with no identity given, a live avatar is returned, never an expired one")
    }

    @Test func avatarsExpireAfterSevenDaysByDefaultOnly() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        #expect(try manager.files.settings(for: .avatars).defaultExpiration == 7 * 24 * 3600)
        try manager.importUserAvatar(DiskImport(cleartextData: Data("face".utf8)), userID: UserID("u"), identityID: IdentityID("i"))
        #expect(try manager.files.expireFiles() == 0)
        #expect(try manager.files.hasUserAvatar(UserID("u")))
    }
}
