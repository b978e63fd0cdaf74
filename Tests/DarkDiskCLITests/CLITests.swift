import DarkDiskStore
import DarkDiskTestTraits
import Foundation
import Testing

@Suite(.processSlots) struct CLITests {
    /// A failure is exactly one line, prefixed, with a non-zero exit.
    @Test func initImportExportStatus() async throws {
        let store = try CLIStore()
        let initRun = try await store.darkdisk(["init"])
        #expect(initRun.status == 0, "\(initRun.stderr)")
        let plaintext = CLIStore.bytes(1_000_000, seed: 9)
        let input = try store.file("in.bin", plaintext)
        await #expect(try store.darkdisk(["import", input, "--node", "file1", "--persistent"]).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--node", "stdin1"], stdin: plaintext).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--node", "thumb1", "--kind", "thumbnail"], stdin: Data("png".utf8)).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--user", "u1", "--identity", "me@x.org"], stdin: Data("av".utf8)).status == 0)

        let toStdout = try await store.darkdisk(["export", "--node", "file1"])
        #expect(toStdout.status == 0)
        #expect(toStdout.stdout == plaintext)
        let outPath = store.directory + "/out.bin"
        await #expect(try store.darkdisk(["export", "--node", "stdin1", "-o", outPath]).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: outPath)) == plaintext)
        await #expect(try store.darkdisk(["export", "--node", "thumb1", "--kind", "thumbnail"]).stdout == Data("png".utf8))

        let status = try await store.darkdisk(["status", "--json"])
        #expect(status.status == 0)
        let json = try JSONSerialization.jsonObject(with: status.stdout) as! [String: Any]
        let pools = json["pools"] as! [[String: Any]]
        let data = pools.first { $0["name"] as? String == "data" }!
        #expect((data["files"] as? Int) == 2)
        #expect((data["persistentSize"] as? Int ?? 0) > 1_000_000)
        #expect((data["maxSize"] as? Int) == 25 * 1024 * 1024)
        let table = try await store.darkdisk(["status"])
        #expect(table.output.contains("thumbnails"))
    }

    @Test func importCreatesTheStoreOnFirstUse() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["import", "-", "--node", "n"], stdin: Data("x".utf8)).status == 0)
        await #expect(try store.darkdisk(["export", "--node", "n"]).stdout == Data("x".utf8))
    }

    @Test func badInputsFailWithOneLine() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["init"]).status == 0)
        await expectOneLineFailure(try store.darkdisk(["init"]), mentioning: "already exists")
        await expectOneLineFailure(try store.darkdisk(["import", store.directory + "/missing", "--node", "n"]), mentioning: "no such file")
        await expectOneLineFailure(try store.darkdisk(["import", store.directory, "--node", "n"]), mentioning: "directory")
        await expectOneLineFailure(try store.darkdisk(["import", "-", "--node", "../x"], stdin: Data()), mentioning: "invalid node ID")
        await expectOneLineFailure(try store.darkdisk(["import", "-", "--node", String(repeating: "a", count: 300)], stdin: Data()), mentioning: "1 to 64")
        await expectOneLineFailure(try store.darkdisk(["import", "-", "--node", "n", "--kind", "bogus"], stdin: Data()), mentioning: "--kind")
        await expectOneLineFailure(try store.darkdisk(["import", "-"], stdin: Data()), mentioning: "--node")
        await expectOneLineFailure(try store.darkdisk(["import", "-", "--user", "u"], stdin: Data()), mentioning: "--identity")
        await expectOneLineFailure(try store.darkdisk(["export", "--node", "nothing"]), mentioning: "no data stored locally")
        await expectOneLineFailure(try store.darkdisk(["export", "--node", "a/b"]), mentioning: "invalid node ID")
        await expectOneLineFailure(try store.darkdisk(["export"]), mentioning: "--node")
        await expectOneLineFailure(try Shell.run(Shell.darkdisk, ["frobnicate"]), mentioning: "frobnicate")
        await expectOneLineFailure(try store.darkdisk(["mount", store.directory + "/no/where"]), mentioning: "does not exist")
        await expectOneLineFailure(try store.darkdisk(["mount", try store.file("plain-file", Data())]), mentioning: "not a directory")
        await expectOneLineFailure(try store.darkdisk(["mount", store.directory, "-o", "suid_everything"]), mentioning: "unsupported mount option")
        await expectOneLineFailure(try store.darkdisk(["mount", store.directory, "--write-back", "90000"]), mentioning: "--write-back")
        // A cache import larger than the pool: an error, nothing stored, the other cache files kept.
        await #expect(try store.darkdisk(["import", try store.file("kept", Data(count: 5_000)), "--node", "kept"]).status == 0)
        await #expect(try store.darkdisk(["config", "set", "pool.data.max_size", "100K"]).status == 0)
        await expectOneLineFailure(try store.darkdisk(["import", try store.file("huge", Data(count: 300_000)), "--node", "huge"]), mentioning: "--persistent")
        await expectOneLineFailure(try store.darkdisk(["export", "--node", "huge"]), mentioning: "no data stored locally")
        await expectOneLineFailure(try store.darkdisk(["export", "--node", "kept", "-o", store.directory + "/no/such/dir/out"]), mentioning: "No such file or directory")
        // -o into a FIFO writes into it (it used to be replaced by a regular file, as /dev/null or /dev/full
        // would have been), and over a private file keeps it private.
        let fifo = store.directory + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let reader = try await Shell.sh("(timeout 30 cat \(Shell.quote(fifo)) > \(Shell.quote(fifo + ".got")) &) ; \(Shell.quote(Shell.darkdisk)) export --node kept -o \(Shell.quote(fifo)) --store \(Shell.quote(store.storePath)); sleep 0.5; test -p \(Shell.quote(fifo)) && wc -c < \(Shell.quote(fifo + ".got"))")
        #expect(reader.status == 0 && reader.output == "5000\n", "export -o FIFO: \(reader.output) \(reader.stderr)")
        let privateFile = try store.file("private.out", Data())
        #expect(chmod(privateFile, 0o600) == 0)
        await #expect(try store.darkdisk(["export", "--node", "kept", "-o", privateFile]).status == 0)
        await #expect(try Shell.sh("stat -c %a \(Shell.quote(privateFile))").output == "600\n", "export -o over a 0600 file keeps it 0600")
        await #expect(try store.darkdisk(["export", "--node", "kept"]).stdout == Data(count: 5_000))
        await expectOneLineFailure(try store.darkdisk(["mount", store.directory, "-o", "subtype=other"]), mentioning: "unsupported mount option")
        await expectOneLineFailure(try store.darkdisk(["mount", store.directory, "-o", "max_read=lots"]), mentioning: "needs a number of bytes")
        await expectOneLineFailure(try store.darkdisk(["mount", store.directory, "-o", "max_read=0"]), mentioning: "needs a number of bytes")
        await expectOneLineFailure(try store.darkdisk(["unmount", store.directory]), mentioning: "cannot unmount")

        let other = try CLIStore()
        await expectOneLineFailure(try other.darkdisk(["status"]), mentioning: "darkdisk init")
        await expectOneLineFailure(try other.darkdisk(["export", "--node", "n"]), mentioning: "darkdisk init")
    }

    @Test func keyFileReadableByOthersIsRefused() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["init"]).status == 0)
        let keyPath = StoreLocation(directory: store.storePath).keyPath
        chmod(keyPath, 0o644)
        await expectOneLineFailure(try store.darkdisk(["status"]), mentioning: "chmod 600")
        chmod(keyPath, 0o600)
        await #expect(try store.darkdisk(["status"]).status == 0)
    }

    @Test func passphraseStore() async throws {
        let store = try CLIStore()
        let good = try store.file("good.pass", Data("correct horse battery\n".utf8))
        let bad = try store.file("bad.pass", Data("wrong horse\n".utf8))
        let empty = try store.file("empty.pass", Data())
        await expectOneLineFailure(try store.darkdisk(["init", "--passphrase-file", empty, "--scrypt-log-n", "10"]), mentioning: "empty")
        await #expect(try store.darkdisk(["init", "--passphrase-file", good, "--scrypt-log-n", "10"]).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--node", "n", "--passphrase-file", good], stdin: Data("s".utf8)).status == 0)
        await expectOneLineFailure(try store.darkdisk(["export", "--node", "n"]), mentioning: "passphrase")
        await expectOneLineFailure(try store.darkdisk(["export", "--node", "n", "--passphrase-file", bad]), mentioning: "wrong passphrase")
        await expectOneLineFailure(try store.darkdisk(["export", "--node", "n", "--passphrase-file", store.directory + "/none"]), mentioning: "cannot read passphrase file")
        await #expect(try store.darkdisk(["export", "--node", "n"], environment: ["DARKDISK_PASSPHRASE_FILE": good]).stdout == Data("s".utf8))
    }

    @Test func storeFromEnvironment() async throws {
        let store = try CLIStore()
        let run = try await Shell.run(Shell.darkdisk, ["import", "-", "--node", "env"], stdin: Data("e".utf8), environment: ["DARKDISK_STORE": store.storePath])
        #expect(run.status == 0, "\(run.stderr)")
        await #expect(try store.darkdisk(["export", "--node", "env"]).stdout == Data("e".utf8))
    }

    @Test func helpIsNotAnError() async throws {
        let run = try await Shell.run(Shell.darkdisk, ["--help"])
        #expect(run.status == 0)
        #expect(run.output.contains("mount"))
        await #expect(try Shell.run(Shell.darkdisk, ["import", "--help"]).output.contains("--persistent"))
    }
}
