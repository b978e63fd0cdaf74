import DarkDiskStore
import DarkDiskCrypto
import DarkDiskTestTraits
import Foundation
import Testing

/// `fetch`, `export` and `push` for a node's metadata and thumbnail and for user avatars, across two stores.
@Suite(.processSlots) struct MetaAndAvatarCommandTests {
    /// Store A pushes to a file bucket; store B joins it with the same passphrase and pulls.
    func twoStores() throws -> (a: CLIStore, b: CLIStore, passphrase: String) {
        let a = try CLIStore()
        let b = try CLIStore()
        let bucket = a.directory + "/bucket"
        try FileManager.default.createDirectory(atPath: bucket, withIntermediateDirectories: true)
        let passphrase = try a.file("pass", Data("meta and avatars\n".utf8))
        #expect(try a.darkdisk(["init", "--remote", "file://" + bucket, "--passphrase-file", passphrase, "--scrypt-log-n", "10"]).status == 0)
        #expect(try b.darkdisk(["init", "--remote", "file://" + bucket, "--passphrase-file", passphrase, "--scrypt-log-n", "10"]).status == 0)
        return (a, b, passphrase)
    }

    @Test func thumbnailsAndMetadataComeWithoutTheData() async throws {
        let (a, b, passphrase) = try twoStores()
        let thumbnail = CLIStore.bytes(30_000, seed: 51)
        let metadata = Data(#"{"title":"holiday"}"#.utf8)
        let push = try await a.darkdisk(["push", try a.file("d", CLIStore.bytes(2_000_000, seed: 52)), "--node", "pic",
                                   "--thumbnail", try a.file("t", thumbnail), "--metadata", try a.file("m", metadata),
                                   "--passphrase-file", passphrase])
        #expect(push.status == 0, "\(push.stderr)")
        await #expect(try b.darkdisk(["pull", "--passphrase-file", passphrase]).status == 0)

        let fetch = try await b.darkdisk(["fetch", "--node", "pic", "--kind", "thumbnail", "--passphrase-file", passphrase])
        #expect(fetch.status == 0 && fetch.stderr.isEmpty, "\(fetch.stderr)")
        let manager = try DiskManager(location: StoreLocation(directory: b.storePath), passphrase: Array("meta and avatars".utf8))
        await #expect(try manager.files.nodeFile(NodeID("pic"), kind: .thumbnail) != nil)
        await #expect(try manager.files.nodeFile(NodeID("pic"), kind: .data) == nil, "the data stayed in the cloud")
        await #expect(try b.darkdisk(["export", "--node", "pic", "--kind", "thumbnail", "--passphrase-file", passphrase]).stdout == thumbnail)
        // Metadata that is not local is fetched on demand by export.
        await #expect(try b.darkdisk(["export", "--node", "pic", "--kind", "metadata", "--passphrase-file", passphrase]).stdout == metadata)

        let bare = try await a.darkdisk(["push", try a.file("e", Data("no extras".utf8)), "--node", "bare", "--passphrase-file", passphrase])
        #expect(bare.status == 0)
        await #expect(try b.darkdisk(["pull", "--passphrase-file", passphrase]).status == 0)
        let missing = try await b.darkdisk(["fetch", "--node", "bare", "--kind", "thumbnail", "--passphrase-file", passphrase])
        #expect(missing.status != 0 && missing.stderrLines.count == 1 && missing.stderr.contains("has no thumbnail"), "\(missing.stderr)")
    }

    @Test func avatarsPushedOnOneMachineAreFetchedOnAnother() async throws {
        let (a, b, passphrase) = try twoStores()
        let picture = CLIStore.bytes(25_000, seed: 53)
        let push = try await a.darkdisk(["push", try a.file("avatar.png", picture), "--user", "carol", "--identity", "auth0|c@x.org",
                                   "--display", "--passphrase-file", passphrase])
        #expect(push.status == 0, "\(push.stderr)")
        let fetch = try await b.darkdisk(["fetch", "--user", "carol", "--passphrase-file", passphrase])
        #expect(fetch.status == 0, "\(fetch.stderr)")
        let manager = try DiskManager(location: StoreLocation(directory: b.storePath), passphrase: Array("meta and avatars".utf8))
        let stored = try await #require(try manager.files.userAvatar(UserID("carol"), identityID: IdentityID("auth0|c@x.org")))
        #expect(try FileConversion.decryptIntoMemory(path: stored.cryptoFile.path, key: stored.cryptoFile.key) == picture)

        let unknown = try await b.darkdisk(["fetch", "--user", "dave", "--passphrase-file", passphrase])
        #expect(unknown.status != 0 && unknown.stderrLines.count == 1 && unknown.stderr.contains("no record"), "\(unknown.stderr)")
        let both = try await b.darkdisk(["push", try b.file("x", Data("x".utf8)), "--node", "n", "--user", "carol", "--identity", "i"])
        #expect(both.status != 0 && both.stderr.contains("not both"), "\(both.stderr)")
        let noIdentity = try await a.darkdisk(["push", try a.file("y", Data("y".utf8)), "--user", "carol", "--passphrase-file", passphrase])
        #expect(noIdentity.status != 0 && noIdentity.stderr.contains("--identity"), "\(noIdentity.stderr)")
    }
}
