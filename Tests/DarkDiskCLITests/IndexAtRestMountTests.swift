import DarkDiskTestSupport
import Foundation
import Testing

/// A mounted store with a passphrase writes no name, link target or extended attribute of its drive into
/// its index in the clear, while mounted or after; a store without one does (its key file is beside it).
@Suite(.processSlots) struct IndexAtRestMountTests {
    static let secrets = ["wombat-folder", "aardvark-file", "numbat-link", "echidna-target"]

    /// The secrets found in the clear in a store's index files (database, WAL, shared memory) and the drive's
    /// commit journal.
    static func clearSecrets(in store: CLIStore) -> [String] {
        var bytes = Data()
        for file in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm", "drive-commits.journal"] {
            if let data = FileManager.default.contents(atPath: store.storePath + "/data/" + file) { bytes.append(data) }
        }
        return secrets.filter { bytes.range(of: Data($0.utf8)) != nil }
    }

    static func makeTree(in files: String) async throws {
        _ = try await DriveWriteTests.sh("""
            cd \(Shell.quote(files))
            mkdir wombat-folder
            echo 'the contents' > wombat-folder/aardvark-file.txt
            ln -s /home/echidna-target wombat-folder/numbat-link
            setfattr -n user.note -v platypus wombat-folder/aardvark-file.txt
            sync
            """)
    }

    @Test func aMountedStoreWithAPassphraseKeepsNamesOutOfItsIndex() async throws {
        let remote = try RemoteBucket()
        try remote.join("file://" + remote.bucket)
        do {
            let mount = try remote.mountB(["--poll-interval", "0"])
            try await Self.makeTree(in: mount.path + "/files")
            #expect(Self.clearSecrets(in: remote.b).isEmpty, "while mounted")
            try RemoteBucket.check(try remote.darkdiskB(["unmount", mount.path]), "unmount")
        }
        #expect(Self.clearSecrets(in: remote.b).isEmpty, "after the unmount")
        let again = try remote.mountB(["--poll-interval", "0"])
        let listing = try await DriveWriteTests.sh("cd \(Shell.quote(again.path + "/files/wombat-folder")) && ls && readlink numbat-link && getfattr --only-values -n user.note aardvark-file.txt && cat aardvark-file.txt")
        #expect(listing == "aardvark-file.txt\nnumbat-link\n/home/echidna-target\nplatypus" + "the contents\n", "\(listing)")

        // The control: a store without a passphrase, the same tree, the names in its index.
        let plain = try CLIStore()
        try RemoteBucket.check(try await plain.darkdisk(["init"]), "init")
        let mount = try Mount(plain)
        try await Self.makeTree(in: mount.path + "/files")
        try RemoteBucket.check(try await plain.darkdisk(["unmount", mount.path]), "unmount")
        #expect(Self.clearSecrets(in: plain) == Self.secrets)
    }

    /// A store given its first passphrase while mounted keeps its index as it is while the mount runs (the
    /// daemon has it open), and has it encrypted by the first command once the mount stopped.
    @Test func aPassphraseGivenWhileMountedEncryptsTheIndexOnceTheMountStops() async throws {
        let store = try CLIStore()
        try RemoteBucket.check(try await store.darkdisk(["init"]), "init")
        let mount = try Mount(store)
        try await Self.makeTree(in: mount.path + "/files")
        let pass = try store.file("pass", Data("a long enough passphrase\n".utf8))
        let set = try await store.darkdisk(["passphrase", "set", "--new-passphrase-file", pass, "--scrypt-log-n", "10"])
        #expect(set.status == 0 && set.output.contains("encrypted the next time darkdisk opens the store"), "\(set.output) \(set.stderr)")
        try RemoteBucket.check(try await store.darkdisk(["status", "--passphrase-file", pass]), "status")
        #expect(Self.clearSecrets(in: store) == Self.secrets, "the mount has it open: kept as it is")
        let daemon = try #require(MountDaemon.pid(serving: mount.path))
        try RemoteBucket.check(try await store.darkdisk(["unmount", mount.path]), "unmount")
        // The mount stops when its daemon exits (after the unmount it uploads what is queued, for up to
        // `--stop-timeout`): until then it holds the index open.
        #expect(await eventually(within: 60) { !MountDaemon.isAlive(daemon) }, "the daemon exited")
        try RemoteBucket.check(try await store.darkdisk(["status", "--passphrase-file", pass]), "status")
        #expect(Self.clearSecrets(in: store).isEmpty, "encrypted once the store was opened alone")
        let again = try Mount(store, options: ["--passphrase-file", pass])
        let listing = try await DriveWriteTests.sh("ls \(Shell.quote(again.path + "/files/wombat-folder"))")
        #expect(listing == "aardvark-file.txt\nnumbat-link\n", "\(listing)")
    }
}
