import DarkDiskTestTraits
import Foundation
import Testing

/// A passphrase comes from a file only its owner can read or from a pipe, can be added and changed, and
/// has a minimum length and a recorded scrypt cost.
@Suite(.processSlots) struct PassphraseTests {
    @Test func aPassphraseFromAPipeAndNotFromAFileOthersCanRead() async throws {
        let store = try CLIStore()
        let pipeInit = try await Shell.run("/bin/bash", ["-c", "\(Shell.quote(Shell.darkdisk)) init --store \(Shell.quote(store.storePath)) --passphrase-file <(printf 'piped secret\\n')"])
        #expect(pipeInit.status == 0, "init with a passphrase from a pipe: \(pipeInit.stderr)")
        let importRun = try await Shell.run("/bin/bash", ["-c", "echo hi | \(Shell.quote(Shell.darkdisk)) import - --node a --store \(Shell.quote(store.storePath))"
                                                    + " --passphrase-file <(echo 'piped secret')"])
        #expect(importRun.status == 0, "\(importRun.stderr)")
        let open = try store.file("open-pass", Data("piped secret\n".utf8))
        #expect(chmod(open, 0o644) == 0)
        await expectOneLineFailure(try store.darkdisk(["export", "--node", "a", "--passphrase-file", open]), mentioning: "can be read by group or others (mode 644)")
        #expect(chmod(open, 0o600) == 0)
        await #expect(try store.darkdisk(["export", "--node", "a", "--passphrase-file", open]).output == "hi\n")
    }

    /// A new passphrase has at least 8 characters, at `init` and at `passphrase set`; the key file made
    /// with one records scrypt's cost: N = 2^17 unless `--scrypt-log-n` says otherwise, and `passphrase set`
    /// brings a key file made at a lower cost up to it.
    @Test func aShortPassphraseIsRefusedAndTheCostIsRecorded() async throws {
        let store = try CLIStore()
        let short = try store.file("short", Data("1234567\n".utf8)), good = try store.file("good", Data("12345678\n".utf8))
        for file in [short, good] { #expect(chmod(file, 0o600) == 0) }
        await expectOneLineFailure(try store.darkdisk(["init", "--passphrase-file", short]), mentioning: "at least 8 characters")
        #expect(!FileManager.default.fileExists(atPath: store.storePath), "a refused init leaves nothing")
        for bad in ["9", "21", "many"] {
            await expectOneLineFailure(try store.darkdisk(["init", "--passphrase-file", good, "--scrypt-log-n", bad]), mentioning: "scrypt")
        }
        #expect(!FileManager.default.fileExists(atPath: store.storePath), "a refused cost leaves nothing")
        await #expect(try store.darkdisk(["init", "--passphrase-file", good]).status == 0)
        #expect(try Self.scryptN(store) == 1 << 17, "the standard cost")
        await expectOneLineFailure(try store.darkdisk(["passphrase", "set", "--new-passphrase-file", short, "--passphrase-file", good]),
                                   mentioning: "at least 8 characters")
        await #expect(try store.darkdisk(["status", "--passphrase-file", good]).status == 0, "the old passphrase still opens it")

        let cheap = try CLIStore()
        await #expect(try cheap.darkdisk(["init", "--passphrase-file", good, "--scrypt-log-n", "10"]).status == 0)
        #expect(try Self.scryptN(cheap) == 1 << 10)
        await #expect(try cheap.darkdisk(["import", "-", "--node", "n", "--passphrase-file", good], stdin: Data("kept".utf8)).status == 0)
        await #expect(try cheap.darkdisk(["passphrase", "set", "--new-passphrase-file", good, "--passphrase-file", good]).status == 0)
        #expect(try Self.scryptN(cheap) == 1 << 17, "passphrase set upgrades the cost")
        await #expect(try cheap.darkdisk(["export", "--node", "n", "--passphrase-file", good]).output == "kept")
    }

    /// scrypt's N as the store's key file records it.
    static func scryptN(_ store: CLIStore) throws -> Int? {
        let keyFile = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: store.storePath + "/config/master.key"))) as? [String: Any]
        return keyFile?["n"] as? Int
    }

    @Test func passphraseSetAddsAndChangesItEverywhere() async throws {
        // A store without a passphrase gets one; then it changes; the key (and every node) stays.
        let store = try CLIStore()
        let bucket = store.directory + "/bucket"
        try FileManager.default.createDirectory(atPath: bucket, withIntermediateDirectories: true)
        await #expect(try store.darkdisk(["init", "--remote", "file://" + bucket]).status == 0)
        await #expect(try store.darkdisk(["push", try store.file("n", CLIStore.bytes(2000, seed: 9)), "--node", "n"]).status == 0)
        let first = try store.file("first", Data("first passphrase\n".utf8)), second = try store.file("second", Data("second passphrase\n".utf8))
        for file in [first, second] { #expect(chmod(file, 0o600) == 0) }
        let add = try await store.darkdisk(["passphrase", "set", "--new-passphrase-file", first])
        #expect(add.status == 0, "\(add.stderr)")
        await expectOneLineFailure(try store.darkdisk(["status"]), mentioning: "protected by a passphrase")
        await #expect(try store.darkdisk(["status", "--passphrase-file", first]).status == 0)
        await expectOneLineFailure(try store.darkdisk(["passphrase", "set", "--new-passphrase-file", second, "--passphrase-file", second]),
                             mentioning: "wrong passphrase")
        await #expect(try store.darkdisk(["passphrase", "set", "--new-passphrase-file", second, "--passphrase-file", first]).status == 0)
        await expectOneLineFailure(try store.darkdisk(["status", "--passphrase-file", first]), mentioning: "wrong passphrase")
        await #expect(try store.darkdisk(["export", "--node", "n", "--passphrase-file", second]).stdout == CLIStore.bytes(2000, seed: 9))
        // The remote's copy changed too: a second machine joins with the new passphrase and reads the node.
        let other = try CLIStore()
        await expectOneLineFailure(try other.darkdisk(["init", "--remote", "file://" + bucket, "--passphrase-file", first, "--scrypt-log-n", "10"]), mentioning: "wrong passphrase")
        await #expect(try other.darkdisk(["init", "--remote", "file://" + bucket, "--passphrase-file", second, "--scrypt-log-n", "10"]).status == 0)
        await #expect(try other.darkdisk(["pull", "--passphrase-file", second]).status == 0)
        await #expect(try other.darkdisk(["export", "--node", "n", "--passphrase-file", second]).stdout == CLIStore.bytes(2000, seed: 9))
    }
}
