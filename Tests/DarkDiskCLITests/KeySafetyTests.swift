import DarkDiskTestTraits
import Foundation
import Testing

/// A store never gets a second key, never attaches to a remote whose nodes another key sealed, and a
/// running command keeps its keys to itself.
@Suite(.processSlots) struct KeySafetyTests {
    /// With the key file moved away, `import` and `mount` used to create a fresh key beside the
    /// existing index, and the store then held nodes under two keys.
    @Test func aStoreWhoseKeyIsMissingIsRefusedNeverRekeyed() async throws {
        let store = try CLIStore()
        let data = CLIStore.bytes(5000, seed: 1)
        await #expect(try store.darkdisk(["import", "-", "--node", "old", "--persistent"], stdin: data).status == 0)
        let key = store.storePath + "/config/master.key", away = store.directory + "/master.key.away"
        try FileManager.default.moveItem(atPath: key, toPath: away)
        let index = try Data(contentsOf: URL(fileURLWithPath: store.storePath + "/data/index.sqlite"))
        for command in [["import", "-", "--node", "new"], ["status"], ["export", "--node", "old"], ["init"],
                        ["mount", store.directory + "/mnt"], ["push", try store.file("p", data), "--node", "p"]] {
            let run = try await store.darkdisk(command, stdin: data)
            expectOneLineFailure(run, mentioning: "has no key file at \(key)")
            #expect(!FileManager.default.fileExists(atPath: key), "\(command[0]) made a new key")
        }
        #expect(!Mount.isMounted(store.directory + "/mnt"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.storePath + "/data/index.sqlite")) == index, "the index is untouched")
        // The key back in place: everything reads.
        try FileManager.default.moveItem(atPath: away, toPath: key)
        await #expect(try store.darkdisk(["export", "--node", "old"]).stdout == data)
    }

    /// `init --remote` without a passphrase on a remote that already holds nodes made a fresh key
    /// that could read none of them; with the remote's keys/master.json gone, `init --passphrase-file`
    /// even published its new key there, for every later machine to join.
    @Test func initRefusesARemoteThatHoldsAnotherKeysNodes() async throws {
        let remote = try RemoteBucket()
        try remote.push("n", CLIStore.bytes(3000, seed: 2))
        let url = "file://" + remote.bucket
        let other = try CLIStore()
        // The remote keeps a passphrase-protected key: joining needs the passphrase.
        await expectOneLineFailure(try other.darkdisk(["init", "--remote", url]), mentioning: "pass --passphrase-file")
        #expect(!FileManager.default.fileExists(atPath: other.storePath + "/config/master.key"))
        // The key file gone from the remote, records still there: refused, with or without a passphrase.
        let keyFile = remote.bucket + "/keys/master.json"
        let saved = try Data(contentsOf: URL(fileURLWithPath: keyFile))
        try FileManager.default.removeItem(atPath: keyFile)
        let newPassphrase = try other.file("pass", Data("another passphrase\n".utf8))
        for extra in [[], ["--passphrase-file", newPassphrase]] {
            await expectOneLineFailure(try other.darkdisk(["init", "--remote", url] + extra), mentioning: "already holds 1 nodes")
            #expect(!FileManager.default.fileExists(atPath: keyFile), "a new key was published to the remote")
            #expect(!FileManager.default.fileExists(atPath: other.storePath + "/config/master.key"))
        }
        // Restored, the right passphrase joins as before.
        try saved.write(to: URL(fileURLWithPath: keyFile))
        await #expect(try other.darkdisk(["init", "--remote", url, "--passphrase-file", remote.passphrase, "--scrypt-log-n", "10"]).status == 0)
        await #expect(try other.darkdisk(["pull", "--passphrase-file", remote.passphrase]).status == 0)
        await #expect(try other.darkdisk(["export", "--node", "n", "--passphrase-file", remote.passphrase]).stdout == CLIStore.bytes(3000, seed: 2))
    }

    /// A store made by `import` could never get a remote; `push` to it went into a folder inside the
    /// store without a word; `status` never showed the remote.
    @Test func remoteSetAttachesAStoreAndRefusesAnotherKeysRemote() async throws {
        let store = try CLIStore()
        let data = CLIStore.bytes(4000, seed: 3)
        await #expect(try store.darkdisk(["import", "-", "--node", "a", "--persistent"], stdin: data).status == 0)
        let status = try await store.darkdisk(["status"])
        #expect(status.output.contains("remote file://\(store.storePath)/data/remote (the store's own folder: no remote set)"), "\(status.output)")
        let push = try await store.darkdisk(["push", try store.file("a.in", data), "--node", "a"])
        #expect(push.status == 0 && push.stderr.contains("no remote is set, so this push goes to the store's own folder file://"), "\(push.stderr)")

        // Another store's remote: refused, and nothing changes.
        let remote = try RemoteBucket()
        try remote.push("n", CLIStore.bytes(3000, seed: 2))
        await expectOneLineFailure(try store.darkdisk(["remote", "set", "file://" + remote.bucket]), mentioning: "keeps a passphrase-protected key")
        try FileManager.default.removeItem(atPath: remote.bucket + "/keys/master.json")
        await expectOneLineFailure(try store.darkdisk(["remote", "set", "file://" + remote.bucket]), mentioning: "sealed under another store's key")
        await #expect(try store.darkdisk(["remote", "get"]).output.contains("no remote set"))

        // An empty bucket: attached; pushes go there, and status and --json say so.
        let bucket = store.directory + "/bucket"
        try FileManager.default.createDirectory(atPath: bucket, withIntermediateDirectories: true)
        let set = try await store.darkdisk(["remote", "set", "file://" + bucket])
        #expect(set.status == 0, "\(set.stderr)")
        await #expect(try store.darkdisk(["remote", "get"]).output == "file://\(bucket)\n")
        let json = try await JSONSerialization.jsonObject(with: try store.darkdisk(["status", "--json"]).stdout) as? [String: Any]
        #expect(json?["remote"] as? String == "file://" + bucket && json?["remoteIsDefault"] as? Bool == false)
        let second = try await store.darkdisk(["push", try store.file("b.in", data), "--node", "b"])
        #expect(second.status == 0 && second.stderr.isEmpty, "\(second.stderr)")
        #expect(FileManager.default.fileExists(atPath: bucket + "/records/\(try store.objectName("b")).rec"))
        // The same remote again (its records are this store's): accepted.
        await #expect(try store.darkdisk(["remote", "set", "file://" + bucket]).status == 0)
    }

    /// A running darkdisk holds the master key in memory: it dumps no core, and another process of the same
    /// user can neither attach to it nor read its descriptors (a plain process of that user can: the
    /// control). Run as `nobody`, since root may read any process.
    @Test func aRunningCommandDumpsNoCoreAndLetsNoOtherProcessIn() async throws {
        let store = try CLIStore()
        #expect(chmod(store.directory, 0o777) == 0)
        let home = store.directory + "/nobody"
        let script = """
            export HOME=\(Shell.quote(home)) XDG_RUNTIME_DIR=\(Shell.quote(home))
            mkdir -p "$HOME" || exit 3
            \(Shell.quote(Shell.darkdisk)) init --store "$HOME/store" >/dev/null || exit 4
            sleep 3 | \(Shell.quote(Shell.darkdisk)) import - --node n --store "$HOME/store" >/dev/null &
            daemon=$!
            sleep 30 & control=$!
            sleep 1
            grep '^Max core file size' /proc/$daemon/limits
            ls /proc/$daemon/fd >/dev/null 2>&1 && echo darkdisk-fd-readable || echo darkdisk-fd-denied
            ls /proc/$control/fd >/dev/null 2>&1 && echo control-fd-readable || echo control-fd-denied
            kill $control
            wait $daemon
            """
        let run = try await Shell.run("/usr/bin/timeout", ["-s", "KILL", "60", "/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup",
                                                            "--clear-groups", "/bin/sh", "-c", script])
        #expect(run.status == 0, "\(run.output) \(run.stderr)")
        let lines = run.output.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
        #expect(lines.contains("Max core file size 0 0 bytes"), "\(lines)")
        #expect(lines.contains("darkdisk-fd-denied") && lines.contains("control-fd-readable"), "\(lines)")
    }
}
