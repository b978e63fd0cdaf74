import DarkDiskTestTraits
import Foundation
import Testing

/// Standard output that is `-`, full or closed; negative numbers; options that
/// do not apply; `help` of an unknown command; `--version`.
@Suite(.processSlots) struct CommandLineEdgeTests {
    /// `export -o -` wrote a file named `-`; output to a full device exited 0 (status) or trapped;
    /// with standard output closed, plaintext could go to whatever file took its number.
    @Test func standardOutputThatIsADashFullOrClosed() async throws {
        let store = try CLIStore()
        let data = CLIStore.bytes(3000, seed: 4)
        await #expect(try store.darkdisk(["import", "-", "--node", "a"], stdin: data).status == 0)
        let dash = try await Shell.sh("cd \(Shell.quote(store.directory)) && \(Shell.quote(Shell.darkdisk)) export --node a -o - --store store")
        #expect(dash.status == 0 && dash.stdout == data, "export -o -: \(dash.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store.directory + "/-"), "no file named '-'")
        for command in ["export --node a", "export --node a -o -", "status", "status --json", "config list"] {
            let full = try await Shell.sh("\(Shell.quote(Shell.darkdisk)) \(command) --store \(Shell.quote(store.storePath)) > /dev/full")
            expectOneLineFailure(full, mentioning: "cannot write standard output: No space left on device")
            let closed = try await Shell.sh("\(Shell.quote(Shell.darkdisk)) \(command) --store \(Shell.quote(store.storePath)) >&-")
            #expect(closed.status != 0 && closed.stderrLines.count == 1 && closed.stderr.contains("standard output") && closed.stderr.contains("closed"),
                    "\(command) with standard output closed: \(closed.stderr)")
            #expect(!closed.stderr.contains("Invalid argument"))
        }
        await #expect(try store.darkdisk(["check", "--full"]).status == 0, "the store is intact")
        await #expect(try store.darkdisk(["export", "--node", "a"]).stdout == data)
    }

    /// Negative values needed `=` or `--`, though `--help` documents them.
    @Test func negativeNumbersNeedNoEqualsSign() async throws {
        let store = try CLIStore()
        let run = try await store.darkdisk(["import", "-", "--node", "n", "--expiration", "-1"], stdin: Data("x".utf8))
        #expect(run.status == 0, "--expiration -1: \(run.stderr)")
        let set = try await store.darkdisk(["config", "set", "pool.data.default_expiration", "-1"])
        #expect(set.status == 0, "config set KEY -1: \(set.stderr)")
        await #expect(try store.darkdisk(["config", "get", "pool.data.default_expiration"]).output == "-1\n")
        await expectOneLineFailure(try store.darkdisk(["config", "set", "pool.data.default_expiration"]), mentioning: "<VALUE>")
        await expectOneLineFailure(try store.darkdisk(["config", "set", "pool.data.default_expiration", "1", "2"]), mentioning: "one value expected")
    }
}

/// One malformed record made `pull` pull nothing.
@Suite(.processSlots) struct PullSkipsBadRecordsTests {
    @Test func aMalformedRecordIsSkippedAndReportedAndTheRestPulled() async throws {
        let remote = try RemoteBucket()
        try remote.push("good", CLIStore.bytes(2000, seed: 5))
        try remote.push("known", CLIStore.bytes(2000, seed: 6))
        try remote.join("file://" + remote.bucket)
        try remote.push("later", CLIStore.bytes(2000, seed: 7))
        // A record B already knows is damaged (cut short), and a new one (unsealed, plain JSON) is garbage.
        let known = try remote.recordPath("known")
        try Data(try Data(contentsOf: URL(fileURLWithPath: known)).dropLast(3)).write(to: URL(fileURLWithPath: known))
        try Data("<xml/>".utf8).write(to: URL(fileURLWithPath: remote.bucket + "/records/garbage.json"))
        let pull = try remote.darkdiskB(["pull"])
        #expect(pull.status == 1, "a partial pull exits 1: \(pull.stderr)")
        #expect(pull.stderrLines.count == 2 && pull.stderrLines.allSatisfy { $0.hasPrefix("darkdisk: skipped: the record of node '") }, "\(pull.stderr)")
        #expect(pull.stderr.contains("'known'") && pull.stderr.contains("'garbage'"))
        #expect(pull.output.contains("1 new") && pull.output.contains("2 skipped"), "\(pull.output)")
        let listing = try remote.darkdiskB(["export", "--node", "later"])
        #expect(listing.status == 0 && listing.stdout == CLIStore.bytes(2000, seed: 7), "the good new node was pulled: \(listing.stderr)")
        #expect(try remote.darkdiskB(["export", "--node", "known"]).stdout == CLIStore.bytes(2000, seed: 6), "the damaged one keeps what B had")
    }
}

/// The README's `avatar --user alice` failed for an avatar imported here; options that do
/// not apply were ignored; `darkdisk help bogus` exited 0; there was no `--version`.
@Suite(.processSlots) struct CommandLineHonestyTests {
    @Test func theReadmesAvatarExampleWorksForALocalAvatar() async throws {
        let store = try CLIStore()
        let picture = try ImageCommandTests().picture(store, "alice.png", 64, 64)
        await #expect(try store.darkdisk(["import", picture, "--user", "alice", "--identity", "github|42"]).status == 0)
        let run = try await store.darkdisk(["avatar", "--user", "alice"])
        let original = try Data(contentsOf: URL(fileURLWithPath: picture))
        #expect(run.status == 0 && run.stdout == original, "avatar --user alice: \(run.stderr)")
        await expectOneLineFailure(try store.darkdisk(["avatar", "--user", "bob"]), mentioning: "bob")
    }

    @Test func optionsThatDoNotApplyAreRefused() async throws {
        let store = try CLIStore()
        let file = try store.file("a", Data("x".utf8))
        for arguments in [["import", file, "--user", "u", "--identity", "i", "--kind", "thumbnail"],
                          ["fetch", "--user", "u", "--kind", "metadata"],
                          ["persist", "--user", "u", "--kind", "thumbnail", "on"]] {
            await expectOneLineFailure(try store.darkdisk(arguments), mentioning: "is for nodes")
        }
        for flag in ["--migrate-after-upload", "--delete-after-upload"] {
            await expectOneLineFailure(try store.darkdisk(["import", file, "--user", "u", "--identity", "i", flag]), mentioning: "an avatar has no upload hooks")
        }
        await #expect(try store.darkdisk(["import", file, "--node", "n", "--kind", "data"]).status == 0, "--kind with --node is fine")
    }

    @Test func helpOfAnUnknownCommandFailsAndVersionIsThere() async throws {
        await expectOneLineFailure(try Shell.run(Shell.darkdisk, ["help", "bogus"]), mentioning: "no command 'bogus'")
        await expectOneLineFailure(try Shell.run(Shell.darkdisk, ["help", "config", "bogus"]), mentioning: "no command 'bogus'")
        await #expect(try Shell.run(Shell.darkdisk, ["help", "config", "set"]).status == 0)
        let version = try await Shell.run(Shell.darkdisk, ["--version"])
        #expect(version.status == 0 && version.output.hasPrefix("darkdisk ") && version.output.split(separator: ".").count == 3, "\(version.output)")
    }
}

/// Messages named "file descriptor 13" instead of the file.
@Suite(.processSlots) struct MessagesNameFilesTests {
    @Test func aDamagedFileIsNamedByItsPath() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["import", "-", "--node", "a", "--persistent"], stdin: CLIStore.bytes(100_000, seed: 12)).status == 0)
        let files = store.storePath + "/data/files"
        let shard = try #require(try FileManager.default.contentsOfDirectory(atPath: files).first)
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: files + "/" + shard).first)
        let path = files + "/" + shard + "/" + name
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        try handle.seek(toOffset: 50_000)
        let byte = try #require(try handle.read(upToCount: 1))
        try handle.seek(toOffset: 50_000)
        try handle.write(contentsOf: Data([byte[0] ^ 0x01]))
        try handle.close()
        let export = try await store.darkdisk(["export", "--node", "a", "-o", store.directory + "/out"])
        expectOneLineFailure(export, mentioning: name)
        #expect(!export.stderr.contains("file descriptor"), "\(export.stderr)")
    }
}
