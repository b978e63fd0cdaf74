import DarkDiskStore
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite(.processSlots) struct CloudCommandTests {
    @Test func secondMachineJoinsPullsAndReads() async throws {
        let a = try CLIStore()
        let b = try CLIStore()
        let remote = a.directory + "/bucket"
        try FileManager.default.createDirectory(atPath: remote, withIntermediateDirectories: true)
        let passphrase = try a.file("pass", Data("two machines\n".utf8))
        let data = CLIStore.bytes(3_000_000, seed: 11)
        await #expect(try a.darkdisk(["init", "--remote", "file://" + remote, "--passphrase-file", passphrase, "--scrypt-log-n", "10"]).status == 0)
        let push = try await a.darkdisk(["push", try a.file("photo", data), "--node", "photo", "--name", "photo.jpg",
                                   "--thumbnail", try a.file("t", Data("thumb".utf8)), "--passphrase-file", passphrase])
        #expect(push.status == 0, "\(push.stderr)")
        // The scratch file the push composed its cloud file in (kept for a next upload) went with the command.
        let checked = try await a.darkdisk(["check", "--passphrase-file", passphrase])
        #expect(checked.output.contains(" 0 staging files"), "\(checked.output)")

        let wrong = try b.file("wrong", Data("one machine\n".utf8))
        await expectOneLineFailure(try b.darkdisk(["init", "--remote", "file://" + remote, "--passphrase-file", wrong, "--scrypt-log-n", "10"]), mentioning: "wrong passphrase")
        let joined = try await b.darkdisk(["init", "--remote", "file://" + remote, "--passphrase-file", passphrase, "--scrypt-log-n", "10"])
        #expect(joined.status == 0, "\(joined.stderr)")
        #expect(joined.output.contains("joined"))
        await #expect(try b.darkdisk(["pull", "--passphrase-file", passphrase]).output.contains("1 new"))
        // Not local yet: export downloads it on demand.
        let exported = try await b.darkdisk(["export", "--node", "photo", "--passphrase-file", passphrase])
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(exported.stdout == data)

        // push keeps no local copy; fetch is quiet when stderr is not a terminal, and a fetched node is local.
        await #expect(try a.darkdisk(["status", "--json", "--passphrase-file", passphrase]).output.contains("\"files\" : 0"))
        let fetch = try await a.darkdisk(["fetch", "--node", "photo", "--passphrase-file", passphrase])
        #expect(fetch.status == 0 && fetch.stderr.isEmpty, "\(fetch.stderr)")
        let status = try await a.darkdisk(["status", "--json", "--passphrase-file", passphrase])
        #expect(status.output.contains("\"files\" : 1"))
    }

    /// A fetch whose node is larger than the data pool fails in one line that says how to
    /// keep it (it exited 0 and kept nothing), while an export of it streams it; `fetch --persistent` keeps
    /// it, and makes a cached node persistent.
    @Test func fetchOfANodeLargerThanItsPoolFailsOrKeepsItPersistently() async throws {
        let setup = try RemoteBucket()
        let big = CLIStore.bytes(900_000, seed: 81), small = CLIStore.bytes(20_000, seed: 82)
        try setup.push("big", big)
        try setup.push("small", small)
        try setup.join("file://" + setup.bucket)
        try RemoteBucket.check(try setup.darkdiskB(["config", "set", "pool.data.max_size", "500K"]), "config")
        expectOneLineFailure(try setup.darkdiskB(["fetch", "--node", "big"]), mentioning: "--persistent")
        let manager = try DiskManager(location: StoreLocation(directory: setup.b.storePath), passphrase: Array("mount tests".utf8))
        await #expect(try manager.files.storedFile(NodeID("big")) == nil)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: manager.location.temporaryDownloads)) ?? []).isEmpty,
                "the download it could not keep is not left behind")
        // An export needs no room in the pool: it reads the download the store could not keep (it failed
        // with "was not cached"), and leaves nothing behind either.
        let exported = try setup.darkdiskB(["export", "--node", "big"])
        #expect(exported.status == 0 && exported.stdout == big, "\(exported.stderr)")
        await #expect(try manager.files.storedFile(NodeID("big")) == nil)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: manager.location.temporaryDownloads)) ?? []).isEmpty)

        // On a terminal the progress bar shows, and the error then starts a line of its own.
        let command = ([Shell.darkdisk, "fetch", "--node", "big", "--store", setup.b.storePath, "--passphrase-file", setup.passphrase])
            .map(Shell.quote).joined(separator: " ")
        let onTerminal = try await Shell.sh("script -qec \(Shell.quote(command)) /dev/null").output
        #expect(onTerminal.contains("%"), "the bar was drawn: \(onTerminal)")
        let errorLine = try #require(onTerminal.range(of: "darkdisk: "), "\(onTerminal)")
        #expect(onTerminal[..<errorLine.lowerBound].utf8.last == UInt8(ascii: "\n"), "the error starts its own line: \(onTerminal.debugDescription)")

        try RemoteBucket.check(try setup.darkdiskB(["fetch", "--node", "big", "--persistent"]), "fetch --persistent")
        let kept = try await #require(try manager.files.storedFile(NodeID("big")))
        #expect(kept.mode == .persistent)
        #expect(try setup.darkdiskB(["export", "--node", "big"]).stdout == big)

        try RemoteBucket.check(try setup.darkdiskB(["fetch", "--node", "small"]), "fetch")
        await #expect(try manager.files.storedFile(NodeID("small"))?.mode == .cache)
        try RemoteBucket.check(try setup.darkdiskB(["fetch", "--node", "small", "--persistent"]), "fetch --persistent of a cached node")
        await #expect(try manager.files.storedFile(NodeID("small"))?.mode == .persistent)
        expectOneLineFailure(try setup.darkdiskB(["fetch", "--user", "nobody", "--persistent"]), mentioning: "persist --user")
    }

    /// A pull that finds a new version of a node kept here downloads it and keeps it
    /// persistently (the kept copy was dropped and nothing downloaded).
    @Test func pullReplacesAKeptFileWithItsNewVersion() async throws {
        let setup = try RemoteBucket()
        let v1 = CLIStore.bytes(300_000, seed: 83), v2 = CLIStore.bytes(250_000, seed: 84)
        try setup.push("doc", v1)
        try setup.join("file://" + setup.bucket)
        try RemoteBucket.check(try setup.darkdiskB(["fetch", "--node", "doc", "--persistent"]), "fetch --persistent")
        try setup.push("doc", v2)
        let pull = try setup.darkdiskB(["pull"])
        #expect(pull.status == 0, "\(pull.stderr)")
        #expect(pull.output.contains("1 changed") && pull.output.contains("replaced by their new versions: 1 of 1"), "\(pull.output)")
        let manager = try DiskManager(location: StoreLocation(directory: setup.b.storePath), passphrase: Array("mount tests".utf8))
        await #expect(try manager.files.storedFile(NodeID("doc"))?.mode == .persistent, "the new version is kept")
        #expect(try setup.darkdiskB(["export", "--node", "doc"]).stdout == v2)
        #expect(try manager.outline.keptVersionsToReplace().isEmpty)
    }

    /// An interrupted push leaves nothing in /tmp; a killed one leaves its encrypted
    /// scratch file in the store's staging folder (counted by `check`, swept once untouched for ten minutes),
    /// and abandoned writes under a file bucket's `.tmp/` are swept by the next write.
    @Test(arguments: [SIGTERM, SIGKILL]) func anInterruptedPushLeavesNoTemporaryFilesBehind(signal: Int32) async throws {
        let setup = try RemoteBucket()
        let source = try setup.a.file("big", try randomBytes(96 << 20))
        let staging = StoreLocation(directory: setup.a.storePath).cacheStaging
        let before = Set((try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? [])
        let command = ([Shell.darkdisk, "push", source, "--node", "big", "--store", setup.a.storePath, "--passphrase-file", setup.passphrase])
            .map(Shell.quote).joined(separator: " ")
        let push = try Background("exec " + command, in: setup.a.directory)
        let scratch = { ((try? FileManager.default.contentsOfDirectory(atPath: staging)) ?? []).filter { $0.hasSuffix(".scratch") } }
        await #expect(eventually(within: 30) { !scratch().isEmpty }, "the push composes its cloud file in the store's staging folder")
        kill(push.pid, signal)
        _ = await push.wait(seconds: 30)
        let after = Set((try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? [])
        #expect(after.subtracting(before).filter { $0.hasPrefix("darkdisk-push") }.isEmpty, "nothing in /tmp")
        if signal == SIGTERM {
            #expect(scratch().isEmpty, "an interrupted push removes its scratch file")
        } else {
            let check = try await setup.a.darkdisk(["check", "--passphrase-file", setup.passphrase])
            #expect(check.status == 0 && check.output.contains("1 staging files"), "\(check.output)")
        }

        // A write abandoned in the bucket's .tmp/ an hour ago goes with the next push; a recent one stays.
        let tmp = setup.bucket + "/.tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
        try Data("old".utf8).write(to: URL(fileURLWithPath: tmp + "/abandoned"))
        try Data("new".utf8).write(to: URL(fileURLWithPath: tmp + "/in-flight"))
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-7200)], ofItemAtPath: tmp + "/abandoned")
        try setup.push("small", Data("small".utf8))
        #expect(!FileManager.default.fileExists(atPath: tmp + "/abandoned") && FileManager.default.fileExists(atPath: tmp + "/in-flight"))
    }

    @Test func badRemotesFailWithOneLine() async throws {
        let store = try CLIStore()
        await expectOneLineFailure(try store.darkdisk(["init", "--remote", "s3:///prefix"]), mentioning: "bucket")
        await expectOneLineFailure(try store.darkdisk(["init", "--remote", "gopher://x"]), mentioning: "unknown remote scheme")
        let gone = store.directory + "/gone"
        try FileManager.default.createDirectory(atPath: gone, withIntermediateDirectories: true)
        await #expect(try store.darkdisk(["init", "--remote", "file://" + gone]).status == 0)
        await #expect(try store.darkdisk(["push", try store.file("d", Data("d".utf8)), "--node", "n"]).status == 0)
        await #expect(try store.darkdisk(["pull"]).status == 0)
        try FileManager.default.removeItem(atPath: gone)
        await expectOneLineFailure(try store.darkdisk(["pull"]), mentioning: "does not exist")
        await expectOneLineFailure(try store.darkdisk(["fetch", "--node", "nothing"]), mentioning: "darkdisk pull")
        await expectOneLineFailure(try store.darkdisk(["push", store.directory + "/missing", "--node", "n"]), mentioning: "no such file")
        await expectOneLineFailure(try store.darkdisk(["push", store.directory, "--node", "n"]), mentioning: "is a directory")
        await expectOneLineFailure(try store.darkdisk(["push", try store.file("e", Data()), "--node", "../n"]), mentioning: "invalid node ID")
    }

    /// A bucket folder that is suddenly empty (unmounted, or the wrong one) is not "every node deleted": pull
    /// refuses and changes nothing, unless told the remote was emptied on purpose. A mistyped --store is not
    /// a new store for pull and fetch.
    @Test func pullOfAnEmptiedRemoteDeletesNothing() async throws {
        let store = try CLIStore()
        let bucket = store.directory + "/bucket"
        try FileManager.default.createDirectory(atPath: bucket, withIntermediateDirectories: true)
        await #expect(try store.darkdisk(["init", "--remote", "file://" + bucket]).status == 0)
        await #expect(try store.darkdisk(["push", try store.file("d", Data("kept".utf8)), "--node", "n"]).status == 0)
        await #expect(try store.darkdisk(["pull"]).output.contains("1 unchanged"))
        try FileManager.default.moveItem(atPath: bucket, toPath: bucket + ".real")
        try FileManager.default.createDirectory(atPath: bucket, withIntermediateDirectories: true)
        await expectOneLineFailure(try store.darkdisk(["pull"]), mentioning: "--accept-empty-remote")
        try FileManager.default.removeItem(atPath: bucket)
        try FileManager.default.moveItem(atPath: bucket + ".real", toPath: bucket)
        await #expect(try store.darkdisk(["pull"]).output.contains("0 deleted, 1 unchanged"), "the outline survived the refused pull")
        await #expect(try store.darkdisk(["export", "--node", "n"]).output == "kept")

        try FileManager.default.removeItem(atPath: bucket + "/records")
        let emptied = try await store.darkdisk(["pull", "--accept-empty-remote"])
        #expect(emptied.status == 0 && emptied.output.contains("1 deleted"), "\(emptied.output) \(emptied.stderr)")

        let typo = store.directory + "/typo"
        await expectOneLineFailure(try Shell.run(Shell.darkdisk, ["pull", "--store", typo]), mentioning: "darkdisk init")
        await expectOneLineFailure(try Shell.run(Shell.darkdisk, ["fetch", "--node", "n", "--store", typo]), mentioning: "darkdisk init")
        #expect(!FileManager.default.fileExists(atPath: typo), "no store was made at the mistyped path")
    }

    @Test func defaultRemoteIsInsideTheStore() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["push", try store.file("d", Data("local bucket".utf8)), "--node", "n"]).status == 0)
        #expect((try? RemoteBucket.cloudObject(in: store.storePath + "/data/remote", named: store.objectName("n"))) != nil, "the cloud file is in the store's own folder")
        await #expect(try store.darkdisk(["export", "--node", "n"]).output == "local bucket")
    }
}
