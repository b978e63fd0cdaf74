import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import Foundation
import Testing

/// `pull` brings the avatars that user records list into the store's avatar outline (so a mount lists and
/// sizes them before any download), drops local copies of avatars replaced or removed in the cloud, and
/// keeps avatars only imported locally.
@Suite struct AvatarOutlineTests {
    @Test func pullListsAvatarsAndDropsStaleCopies() async throws {
        let setup = try CloudTests.Setup()
        let alice = try UserID("alice")
        let work = try IdentityID("auth0|5f1c@example.com")
        let home = try IdentityID("github|42")
        let picture = CloudTests.bytes(40_000, seed: 51)
        let sync = CloudSync(manager: setup.a, remote: setup.remote)
        try await sync.pushUserIdentity(alice, identityID: home, avatar: nil)
        try await sync.pushUserIdentity(alice, identityID: work, avatar: picture)

        let pulling = CloudSync(manager: setup.b, remote: setup.remote)
        let clock = try await setup.b.outline.version()
        _ = try await pulling.pull()
        let listed = try await setup.b.outline.avatars()
        #expect(listed.map(\.identityID) == [work], "only identities with an avatar are listed")
        #expect(listed.first?.plaintextSize == 40_000, "the image size, known before any download")
        #expect(try await setup.b.outline.version() > clock, "a mount watching the outline clock notices")
        await #expect(try setup.b.files.storedAvatars(alice).isEmpty, "pull downloads no avatar")

        // A local copy of the listed avatar, and one imported here only (another user, not in the cloud).
        _ = try await DownloadManager(manager: setup.b, remote: setup.remote).downloadUserAvatar(alice, identityID: work).value
        #expect(try setup.b.files.storedAvatar(alice, identityID: work) != nil)
        let carol = try UserID("carol")
        _ = try await setup.b.importUserAvatar(DiskImport(cleartextData: CloudTests.bytes(1_000, seed: 52)), userID: carol, identityID: work)

        // Pulling again with nothing changed keeps the copy.
        let unchanged = try await setup.b.outline.version()
        _ = try await pulling.pull()
        #expect(try setup.b.files.storedAvatar(alice, identityID: work) != nil)
        #expect(try await setup.b.outline.version() == unchanged, "an unchanged listing does not move the clock")

        // The avatar is replaced in the cloud: the stale local copy goes, the new size is listed.
        let replacement = CloudTests.bytes(12_345, seed: 53)
        try await sync.pushUserIdentity(alice, identityID: work, avatar: replacement)
        _ = try await pulling.pull()
        #expect(try setup.b.files.storedAvatar(alice, identityID: work) == nil, "the replaced avatar's copy is stale")
        #expect(try setup.b.outline.avatar(alice, identityID: work)?.plaintextSize == 12_345)
        let fetched = try await DownloadManager(manager: setup.b, remote: setup.remote).downloadUserAvatar(alice, identityID: work).value
        #expect(fetched.image == replacement)

        // The user's record goes: so do the listing and the local copy; carol's local-only avatar stays.
        try await setup.remote.delete(CloudLayout.user(alice, with: setup.a))
        _ = try await pulling.pull()
        await #expect(try setup.b.outline.avatars(alice).isEmpty)
        #expect(try setup.b.files.storedAvatar(alice, identityID: work) == nil)
        #expect(try setup.b.files.storedAvatar(carol, identityID: work) != nil, "an avatar only imported here is not the cloud's to delete")
    }

    /// Records written before `plaintextSize` existed: the size comes from the avatar's authenticated header.
    @Test func olderRecordsAreSizedFromTheHeader() async throws {
        let setup = try CloudTests.Setup()
        let bob = try UserID("bob")
        let identity = try IdentityID("mail|bob")
        let picture = CloudTests.bytes(70_001, seed: 54)
        var record = try await CloudSync(manager: setup.a, remote: setup.remote).pushUserIdentity(bob, identityID: identity, avatar: picture)
        record.identities[0].avatar?.plaintextSize = nil
        let json = String(decoding: record.encoded(), as: UTF8.self)
        #expect(!json.contains("plaintextSize"), "an older record, as it was written")
        _ = try await setup.remote.write(CloudLayout.user(bob, with: setup.a), data: try record.sealed(with: setup.a))
        _ = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        #expect(try setup.b.outline.avatar(bob, identityID: identity)?.plaintextSize == 70_001)
    }

    /// Bob's avatar never shows as alice's. The bucket's owner copying bob's sealed record and picture to
    /// alice's names: the record does not open there (it is bound to its name). A record sealed with the key
    /// (by a store of the user) that puts bob's entry in alice's: the entry's key does not unwrap as alice's.
    /// Either way the pull refuses it in one line and the download of alice's avatar never gives bob's.
    @Test func anAvatarMovedToAnotherUserIsRefused() async throws {
        let setup = try CloudTests.Setup()
        let sync = CloudSync(manager: setup.a, remote: setup.remote)
        let alice = try UserID("alice"), bob = try UserID("bob"), identity = try IdentityID("mail")
        let alices = CloudTests.bytes(5_000, seed: 56), bobs = CloudTests.bytes(6_000, seed: 57)
        try await sync.pushUserIdentity(alice, identityID: identity, avatar: alices)
        let bobRecord = try await sync.pushUserIdentity(bob, identityID: identity, avatar: bobs)
        let aliceKey = CloudLayout.user(alice, with: setup.a), aliceAvatar = CloudLayout.avatar(alice, identity, with: setup.a)
        let sealedAlice = try #require(try await setup.remote.readAll(aliceKey))
        let downloads = DownloadManager(manager: setup.b, remote: setup.remote)
        func served() async -> Data? {
            try? await downloads.downloadUserAvatar(alice, identityID: identity, options: DownloadOptions(cacheToDiskManager: false, policy: .remote)).value.image
        }
        _ = try await setup.remote.write(aliceAvatar, data: try #require(try await setup.remote.readAll(CloudLayout.avatar(bob, identity, with: setup.a))))

        _ = try await setup.remote.write(aliceKey, data: try #require(try await setup.remote.readAll(CloudLayout.user(bob, with: setup.a))))
        var pulled = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        #expect(pulled.skipped.count == 1 && pulled.skipped[0].contains("does not authenticate"), "\(pulled.skipped)")
        #expect(try setup.b.outline.avatar(alice, identityID: identity) == nil)
        #expect(try setup.b.outline.avatar(bob, identityID: identity) != nil)
        #expect(await served() == nil, "bob's record opened as alice's")

        var forged = try UserRecord.open(sealedAlice, name: CloudLayout.userName(alice, with: setup.a), expected: alice, with: setup.a)
        forged.identities = bobRecord.identities
        _ = try await setup.remote.write(aliceKey, data: try forged.sealed(with: setup.a))
        pulled = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        #expect(pulled.skipped.count == 1 && pulled.skipped[0].contains("does not unwrap"), "\(pulled.skipped)")
        #expect(try setup.b.outline.avatar(alice, identityID: identity) == nil)
        #expect(await served() != bobs, "bob's picture served as alice's")
    }

    /// A user record that names another user is refused with a clear line and skipped; the rest is pulled.
    @Test func aForeignUserRecordIsSkipped() async throws {
        let setup = try CloudTests.Setup()
        let record = try await CloudSync(manager: setup.a, remote: setup.remote)
            .pushUserIdentity(UserID("alice"), identityID: IdentityID("mail|alice"), avatar: CloudTests.bytes(100, seed: 55))
        #expect(record.userID == "alice")
        let sealed = try #require(try await setup.remote.readAll(CloudLayout.user(UserID("alice"), with: setup.a)))
        _ = try await setup.remote.write(CloudLayout.user(UserID("mallory"), with: setup.a), data: sealed)
        let pulled = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        #expect(pulled.skipped.count == 1 && pulled.skipped[0].contains("does not authenticate"), "\(pulled.skipped)")
        await #expect(try setup.b.outline.avatars(UserID("mallory")).isEmpty, "a record describing another user was accepted")
        await #expect(try setup.b.outline.avatars(UserID("alice")).count == 1, "the good record is pulled")
    }

    /// An outline entry of another user, or under a key of another master key, is refused and changes nothing.
    @Test func foreignEntriesAreRefused() async throws {
        let setup = try CloudTests.Setup()
        let alice = try UserID("alice"), bob = try UserID("bob")
        let identity = try IdentityID("mail|x")
        let wrapped = setup.b.keys.wrap(SymmetricKey.random(), for: .avatar(bob, identity))
        #expect(throws: DarkDiskError.self) {
            try setup.b.outline.updateAvatars(alice, entries: [AvatarOutlineEntry(userID: bob, identityID: identity, plaintextSize: 1, wrappedKey: wrapped)])
        }
        #expect(throws: DarkDiskError.self) {
            try setup.b.outline.updateAvatars(alice, entries: [AvatarOutlineEntry(userID: alice, identityID: identity, plaintextSize: 1, wrappedKey: Array(repeating: 7, count: 60))])
        }
        await #expect(try setup.b.outline.avatars().isEmpty)
    }
}
