import DarkDiskTestSupport
import DarkDiskSync
import DarkDiskTestTraits
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The drive used as people use a disk, on a loaded machine (two CPU hogs beside each test, as a laptop
/// under load): every file whose `close` returned keeps its bytes, every handle's writes land in one
/// version, a name is its bytes, a listing is whole, and one store has one mount.
@Suite(.processSlots) struct DriveIntegrityTests {
    /// Two `stress-ng` CPU hogs for the length of `body`.
    static func underLoad<T>(_ body: () async throws -> T) async throws -> T {
        let hog = try Shell.spawn("/usr/bin/stress-ng", ["--cpu", "2", "--timeout", "600"], newProcessGroup: true)
        defer {
            kill(-hog, SIGKILL)
            _ = Shell.wait(hog)
        }
        return try await body()
    }

    /// `body`, beside the hogs if `loaded`.
    static func maybeUnderLoad(_ loaded: Bool, _ body: () async throws -> Void) async throws {
        if loaded { try await underLoad(body) } else { try await body() }
    }

    /// The number of descriptors process `pid` holds.
    static func descriptors(of pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
    }

    /// A burst of small files made by a shell loop keeps the daemon's descriptors bounded: its records wait
    /// for the index without one each, so a daemon whose hard limit is 512 makes 4,000 files, every one of
    /// which reads back after a remount, with no error in its log.
    @Test func aBurstOfSmallFilesKeepsDescriptorsBoundedAndEveryFile() async throws {
        let store = try CLIStore()
        #expect(try await store.darkdisk(["init"]).status == 0)
        // (The daemon raises its soft limit to the hard one: that is the limit it lives with.)
        let mount = try Mount(store, options: ["--write-back", "1"], descriptorLimit: 512)
        let files = mount.path + "/files"
        let pid = try #require(mount.daemonPID)
        let count = 4_000
        let peak = Locked(0)
        let sampling = Task.detached {
            while !Task.isCancelled {
                let now = Self.descriptors(of: pid)
                peak.withLock { $0 = max($0, now) }
                try? await Task.sleep(nanoseconds: 20_000_000)
            }
        }
        let loop = try await Self.underLoad {
            try await Shell.sh("mkdir \(Shell.quote(files))/x && cd \(Shell.quote(files))/x && for i in $(seq 1 \(count)); do echo \"file $i\" > f$i || exit 1; done")
        }
        sampling.cancel()
        #expect(loop.status == 0, "the loop failed: \(loop.stderr)\n\(mount.log.suffix(3000))")
        #expect(peak.withLock { $0 } < 256, "the daemon held \(peak.withLock { $0 }) descriptors at most")
        try await DriveWriteTests.sh("fusermount3 -u \(Shell.quote(mount.path))")
        let again = try Mount(store, options: ["--write-back", "1"])
        let check = try await Shell.sh("""
            cd \(Shell.quote(again.path + "/files/x")) && bad=0
            for i in $(seq 1 \(count)); do line=; read -r line < f$i; [ "$line" = "file $i" ] || bad=$((bad+1)); done; echo $bad
            """)
        #expect(check.output.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "files that lost their content: \(check.output)")
        let errors = mount.log.split(separator: "\n").filter { $0.contains(" error ") || $0.contains("critical") }
        #expect(errors.isEmpty, "\(errors.prefix(5).joined(separator: "\n"))")
    }

    /// Two shell loops appending to one file, and two processes each writing its own slots with an open and a
    /// close around each write: every line and every slot is kept, as on ext4 (each handle of a file writes
    /// into one version; an opening that read a version another handle replaced meanwhile reads it again;
    /// an append goes to the end the content has, not to the older one the kernel may pass).
    @Test func twoProcessesAppendingAndWritingSlotsKeepEveryWrite() async throws {
        let (_, mount, files) = try await DriveWriteTests.mounted(options: ["--write-back", "1"])
        defer { withExtendedLifetime(mount) {} }
        // (The race showed in every unloaded round and rarely beside the hogs: both are run.)
        for round in 1...5 {
            try await Self.maybeUnderLoad(round > 3) {
                let log = files + "/app\(round).log"
                let appenders = try await Shell.sh("""
                    ( for i in $(seq 1 300); do echo "A$i" >> \(Shell.quote(log)); done ) &
                    ( for i in $(seq 1 300); do echo "B$i" >> \(Shell.quote(log)); done ) &
                    wait
                    """)
                #expect(appenders.status == 0, "\(appenders.stderr)")
                let text = try String(contentsOfFile: log, encoding: .utf8)
                let expected = Set((1...300).flatMap { ["A\($0)", "B\($0)"] })
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
                #expect(Set(lines) == expected && lines.count == 600 && !text.contains("\0"),
                        "round \(round): \(lines.count) lines, \(expected.subtracting(lines).count) missing (\(expected.subtracting(lines).sorted().prefix(5))), NUL bytes: \(text.filter { $0 == "\0" }.count)")

                let slots = files + "/slots\(round).bin"
                let writers = try await Shell.run("/usr/bin/python3", ["-c", """
                    import os, sys
                    path = sys.argv[1]
                    open(path, 'wb').close()
                    children = []
                    for p in range(2):
                        pid = os.fork()
                        if pid == 0:
                            for i in range(100):
                                slot = p * 100 + i
                                fd = os.open(path, os.O_WRONLY)
                                os.pwrite(fd, b'%-15d\\n' % slot, slot * 16)
                                os.close(fd)
                            os._exit(0)
                        children.append(pid)
                    for pid in children:
                        assert os.waitpid(pid, 0)[1] == 0
                    data = open(path, 'rb').read()
                    print(sum(data[i * 16:i * 16 + 16] != b'%-15d\\n' % i for i in range(200)), len(data))
                    """, slots])
                #expect(writers.status == 0 && writers.output == "0 3200\n", "round \(round): slots lost, size: \(writers.output) \(writers.stderr)")
            }
        }
    }

    /// `café` in NFC and in NFD are two names, as on ext4: each reads its own bytes, `ls` lists both as
    /// they were made (no suffix), and `rsync -a` in and out keeps both. A name that is not UTF-8 is refused
    /// (`EILSEQ`), never repaired into a name another could share.
    @Test func namesThatDifferOnlyInNormalizationAreTwoNames() async throws {
        let (store, mount, files) = try await DriveWriteTests.mounted()
        defer { withExtendedLifetime(mount) {} }
        let nfc = "caf\u{E9}", nfd = "cafe\u{301}"
        _ = try await Self.underLoad {
            try await DriveWriteTests.sh("""
                cd \(Shell.quote(files))
                printf nfc > "$(printf 'caf\\303\\251')"; printf nfd > "$(printf 'cafe\\314\\201')"
                mkdir "$(printf 'dir\\303\\251')" "$(printf 'dire\\314\\201')"
                printf in-nfc > "$(printf 'dir\\303\\251')/f"; printf in-nfd > "$(printf 'dire\\314\\201')/f"
                """, log: mount)
        }
        let listed = try await DriveWriteTests.sh("cd \(Shell.quote(files)) && ls", log: mount)
        let names = listed.split(separator: "\n").map(String.init)
        #expect(names.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
                    == ["caf\u{E9}", "cafe\u{301}", "dir\u{E9}", "dire\u{301}"].map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) },
                "ls: \(names.map { Array($0.utf8) })")
        #expect(try String(contentsOfFile: files + "/" + nfc, encoding: .utf8) == "nfc")
        #expect(try String(contentsOfFile: files + "/" + nfd, encoding: .utf8) == "nfd")
        #expect(try String(contentsOfFile: files + "/dir\u{E9}/f", encoding: .utf8) == "in-nfc")
        #expect(try String(contentsOfFile: files + "/dire\u{301}/f", encoding: .utf8) == "in-nfd")
        let out = store.directory + "/out", back = files + "/back"
        try await DriveWriteTests.sh("""
            rsync -a \(Shell.quote(files))/ \(Shell.quote(out))/ && mkdir \(Shell.quote(back)) && rsync -a \(Shell.quote(out))/ \(Shell.quote(back))/
            [ "$(cd \(Shell.quote(out)) && find . -type f | wc -l)" = 4 ] && [ "$(cd \(Shell.quote(back)) && find . -type f | wc -l)" = 4 ]
            [ "$(cat \(Shell.quote(back))/"$(printf 'cafe\\314\\201')")" = nfd ]
            """, "rsync -a out of the drive and back in keeps both names", log: mount)
        let invalid = try await Shell.sh("cd \(Shell.quote(files)) && touch \"$(printf 'bad\\377name')\" 2>&1")
        #expect(invalid.status != 0 && invalid.output.contains("Invalid or incomplete multibyte or wide character"), "\(invalid.output)")
    }

    /// A listing is whole or fails: while the index cannot take the drive's commits (another process holds
    /// its write lock for 40 s), `ls` of a folder whose new files wait in the journal fails with an I/O error
    /// after 30 s instead of listing the folder without them; once the index takes them, all are listed. An
    /// `fsync` of a file whose last `close` waits in the journal fails the same way, rather than hang, and
    /// loses nothing: the write it flushed is there once the index takes it.
    @Test func aListingIsWholeOrFails() async throws {
        let (store, mount, files) = try await DriveWriteTests.mounted()
        defer { withExtendedLifetime(mount) {} }
        try await DriveWriteTests.sh("mkdir \(Shell.quote(files))/d && cd \(Shell.quote(files))/d && for i in $(seq 1 50); do echo $i > a$i; done && ls > /dev/null")
        // A writer with a handle open from before: during the lock it writes, closes a duplicate (a commit that
        // waits in the journal), writes again and calls `fsync`.
        let go = store.directory + "/go"
        let flushed = Task { try await Shell.run("/usr/bin/python3", ["-c", """
            import errno, os, sys, time
            fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
            open(sys.argv[2] + ".ready", "w").close()
            while not os.path.exists(sys.argv[2]):
                time.sleep(0.05)
            os.write(fd, b"more\\n")
            os.close(os.dup(fd))
            os.write(fd, b"again\\n")
            try:
                os.fsync(fd)
                print("ok")
            except OSError as error:
                print(errno.errorcode[error.errno])
            os.close(fd)
            """, files + "/d/a1", go]) }
        #expect(await eventually(within: 20) { FileManager.default.fileExists(atPath: go + ".ready") })
        // (Held well past the fsync's 30 s limit, so that the writes before it may take a loaded machine's time.)
        let holder = try Shell.spawn("/bin/sh", ["-c", "(echo 'BEGIN IMMEDIATE;'; sleep 60; echo 'COMMIT;') | sqlite3 \(Shell.quote(store.storePath + "/data/index.sqlite"))"])
        defer { kill(holder, SIGKILL); _ = Shell.wait(holder) }
        try await Task.sleep(nanoseconds: 500_000_000)
        try await DriveWriteTests.sh("cd \(Shell.quote(files))/d && for i in $(seq 1 20); do echo $i > b$i; done")
        _ = FileManager.default.createFile(atPath: go, contents: nil)
        let during = try await Shell.run("/bin/ls", [files + "/d"])
        let count = during.output.split(separator: "\n").count
        #expect(during.status == 0 ? count == 70 : during.stderr.contains("Input/output error"), "a partial listing: \(count) of 70 names, \(during.stderr)")
        let fsync = try await flushed.value
        #expect(fsync.status == 0 && fsync.output.trimmingCharacters(in: .whitespacesAndNewlines) == "EIO", "\(fsync.output) \(fsync.stderr)")
        #expect(await Shell.wait(holder, seconds: 90) != nil)
        let after = try await DriveWriteTests.sh("ls \(Shell.quote(files))/d | wc -l", log: mount)
        #expect(after.trimmingCharacters(in: .whitespacesAndNewlines) == "70")
        #expect(try String(contentsOfFile: files + "/d/a1", encoding: .utf8) == "1\nmore\nagain\n")
    }

    /// One mount per store: a second `mount` of the store (another mount point) is refused in one line that
    /// names the first, and works once the first is gone, also after its daemon was killed.
    @Test func aSecondMountOfAStoreIsRefused() async throws {
        let (store, mount, _) = try await DriveWriteTests.mounted()
        let other = store.directory + "/other"
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        let second = try await store.darkdisk(["mount", other])
        #expect(second.status != 0 && second.stderrLines.count == 1 && second.stderr.contains("already mounted at \(mount.path)"), "\(second.stderr)")
        #expect(!Mount.isMounted(other))
        let pid = try #require(mount.daemonPID)
        #expect(second.stderr.contains("PID \(pid)"), "\(second.stderr)")
        let status = try await store.darkdisk(["status"])
        #expect(status.output.contains(mount.path) && status.output.contains("\(pid)"), "status names the mount: \(status.output)")
        kill(pid, SIGKILL)
        #expect(await eventually(within: 10) { kill(pid, 0) != 0 })
        _ = try await Shell.run("/bin/fusermount3", ["-u", "-z", mount.path])
        let died = try await store.darkdisk(["status"])
        #expect(died.output.contains("died"), "status says the daemon died: \(died.output)")
        let third = try await store.darkdisk(["mount", other, "--write-back", "0"])
        #expect(third.status == 0, "\(third.stderr)")
        _ = try await Shell.run("/bin/fusermount3", ["-u", other])
    }

    /// Two machines on one bucket: a rename on A while B appends to the file leaves both with the renamed
    /// file holding B's edit, and no conflict copy (a rename merges with a content change); two edits at once
    /// leave both machines reading the same version under the name, and the other edit in a conflict copy
    /// that keeps its extension and its own modification time. (B kept its edit under the name, "synced",
    /// while A read the old version, for good.)
    @Test func machinesAgreeAfterARenameDuringAnEditAndAfterTwoEdits() async throws {
        let setup = try RemoteBucket()
        try setup.join("file://" + setup.bucket)
        let options = ["--poll-interval", "1", "--write-back", "1"]
        let mountA = try Mount(setup.a, options: ["--passphrase-file", setup.passphrase] + options)
        let mountB = try setup.mountB(options)
        let (a, b) = (mountA.path + "/files", mountB.path + "/files")
        func listing(_ files: String) -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: files)) ?? []).sorted() }
        func text(_ path: String) -> String? { FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) } }
        func synced(_ path: String) -> Bool {
            (try? Shell.run("/usr/bin/getfattr", ["--only-values", "-n", "user.darkdisk.sync", path]).output) == "synced"
        }

        try Data("v1\n".utf8).write(to: URL(fileURLWithPath: a + "/x1.txt"))
        #expect(await eventually(within: 30) { text(b + "/x1.txt") == "v1\n" }, "B sees x1.txt")
        try await DriveWriteTests.sh("mv \(Shell.quote(a + "/x1.txt")) \(Shell.quote(a + "/x1-renamed.txt")) & echo edit >> \(Shell.quote(b + "/x1.txt")); wait")
        let agreed = await eventually(within: 60) {
            listing(a) == ["x1-renamed.txt"] && listing(b) == ["x1-renamed.txt"] && text(a + "/x1-renamed.txt") == "v1\nedit\n"
                && text(b + "/x1-renamed.txt") == "v1\nedit\n" && synced(a + "/x1-renamed.txt") && synced(b + "/x1-renamed.txt")
        }
        #expect(agreed, "A: \(listing(a)) \(text(a + "/x1-renamed.txt") ?? "-"), B: \(listing(b)) \(text(b + "/x1-renamed.txt") ?? "-")")

        try await DriveWriteTests.sh("touch -d '2001-01-01' \(Shell.quote(b + "/x1-renamed.txt"))")
        try await Task.sleep(nanoseconds: 3_000_000_000)
        try await DriveWriteTests.sh("echo fromA >> \(Shell.quote(a + "/x1-renamed.txt")) & echo fromB >> \(Shell.quote(b + "/x1-renamed.txt")); wait")
        let settled = await eventually(within: 60) {
            listing(a).count == 2 && listing(a) == listing(b) && text(a + "/x1-renamed.txt") == text(b + "/x1-renamed.txt")
                && synced(a + "/x1-renamed.txt") && synced(b + "/x1-renamed.txt")
        }
        #expect(settled, "A: \(listing(a)) \(text(a + "/x1-renamed.txt") ?? "-"), B: \(listing(b)) \(text(b + "/x1-renamed.txt") ?? "-")")
        let copy = try #require(listing(a).first { $0 != "x1-renamed.txt" })
        #expect(copy.hasPrefix("x1-renamed (conflict ") && copy.hasSuffix(").txt"), "\(copy)")
        let kept = Set([text(a + "/x1-renamed.txt"), text(a + "/" + copy)])
        #expect(kept == ["v1\nedit\nfromA\n", "v1\nedit\nfromB\n"], "both edits are kept: \(kept)")
        // The copy is the change made here and then: its time is the edit's, not the version's before it.
        let copyTime = try FileManager.default.attributesOfItem(atPath: a + "/" + copy)[.modificationDate] as? Date
        #expect((copyTime?.timeIntervalSinceNow ?? -1e9) > -600, "the copy's time: \(String(describing: copyTime))")
        // The logs name nodes by ID, never a file by its name (the conflict copy's above all).
        for log in [mountA.log, mountB.log] {
            #expect(!log.contains("x1"), "a log names a file: \(log.split(separator: "\n").filter { $0.contains("x1") })")
        }
    }
}
