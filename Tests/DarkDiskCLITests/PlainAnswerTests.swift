import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Commands that say what is wrong, in one line, and act only where they should: `pin`, `unpin` and
/// `evict` refuse a path outside a darkdisk mount (they wrote `user.darkdisk.*` onto `/etc/passwd`),
/// `evict` of a folder evicts its files, an unknown command or a negative interval is named as such, and a
/// key another user's folder hides is not reported as a missing key.
@Suite(.processSlots) struct PlainAnswerTests {
    @Test func pinUnpinAndEvictRefuseAPathOutsideAMount() async throws {
        let store = try CLIStore()
        #expect(try await store.darkdisk(["init"]).status == 0)
        let plain = store.directory + "/plain.txt"
        try Data("ordinary".utf8).write(to: URL(fileURLWithPath: plain))
        for command in ["pin", "unpin", "evict"] {
            expectOneLineFailure(try await store.darkdisk([command, plain]), mentioning: "\(plain) is not on a darkdisk mount")
        }
        let attributes = try await Shell.run("/usr/bin/getfattr", ["-d", "-m", "-", plain])
        #expect(!attributes.output.contains("darkdisk"), "the ordinary file got attributes: \(attributes.output)")
        expectOneLineFailure(try await store.darkdisk(["evict", store.directory + "/missing"]), mentioning: "no such file or folder")
    }

    /// On a machine with many mounts (snaps, containers), a darkdisk mount past the first page of
    /// `/proc/self/mountinfo` is still found: the table was read with one page (64 of 103 lines), so `pin`
    /// of a file on the mount said it was not on one.
    @Test func aMountPastTheFirstPageOfTheMountTableIsFound() async throws {
        let store = try CLIStore()
        #expect(try await store.darkdisk(["init"]).status == 0)
        var made: [String] = []
        defer { for path in made.reversed() { _ = try? Shell.run("/bin/umount", ["-l", path]) } }
        for index in 0..<80 {
            let path = store.directory + "/many/m\(index)"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            guard try await Shell.run("/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", path]).status == 0 else { break }
            made.append(path)
        }
        let mount = try Mount(store)
        let file = mount.path + "/files/f.txt"
        try Data("kept".utf8).write(to: URL(fileURLWithPath: file))
        let pin = try await store.darkdisk(["pin", file])
        #expect(pin.status == 0, "pin beside \(made.count) other mounts: \(pin.stderr)")
        #expect(try await store.darkdisk(["status"]).output.contains("mounted at \(mount.path)"))
    }

    @Test func evictOfAFolderEvictsTheFilesBelowIt() async throws {
        let (_, mount, files) = try await DriveWriteTests.mounted()
        defer { withExtendedLifetime(mount) {} }
        try await DriveWriteTests.sh("mkdir -p \(Shell.quote(files))/f/sub && echo a > \(Shell.quote(files))/f/a && echo b > \(Shell.quote(files))/f/sub/b")
        try await Self.evictOnceSynced(["/f/a", "/f/sub/b"], evicting: ["/f"], in: files, of: mount)
        for path in ["/f/a", "/f/sub/b"] {
            let local = try await Shell.run("/usr/bin/getfattr", ["--only-values", "-n", "user.darkdisk.local", files + path])
            #expect(local.output == "none", "\(path): \(local.output) \(local.stderr)")
        }
        #expect(try String(contentsOfFile: files + "/f/sub/b", encoding: .utf8) == "b\n", "an evicted file reads again")
    }

    /// `truncate` of a file only the remote has: to a size, it is downloaded first and cut; to nothing, it
    /// needs no download. Neither is `EIO`.
    @Test func truncateOfAnEvictedFileWorks() async throws {
        let (_, mount, files) = try await DriveWriteTests.mounted()
        defer { withExtendedLifetime(mount) {} }
        try await DriveWriteTests.sh("printf 'hello world' > \(Shell.quote(files))/cut && printf 'gone' > \(Shell.quote(files))/empty")
        try await Self.evictOnceSynced(["/cut", "/empty"], evicting: ["/cut", "/empty"], in: files, of: mount)
        try await DriveWriteTests.sh("truncate -s 5 \(Shell.quote(files))/cut && truncate -s 0 \(Shell.quote(files))/empty", log: mount)
        #expect(try String(contentsOfFile: files + "/cut", encoding: .utf8) == "hello")
        #expect(try String(contentsOfFile: files + "/empty", encoding: .utf8) == "")
    }

    /// Waits until `paths` (below the drive `files`) are uploaded, then `darkdisk evict`s `evicting`.
    static func evictOnceSynced(_ paths: [String], evicting: [String], in files: String, of mount: Mount) async throws {
        let synced = await eventually(within: 60) {
            paths.allSatisfy { (try? Shell.run("/usr/bin/getfattr", ["--only-values", "-n", "user.darkdisk.sync", files + $0]).output) == "synced" }
        }
        #expect(synced, "the files were uploaded")
        let evicted = try await mount.store.darkdisk(["evict"] + evicting.map { files + $0 })
        #expect(evicted.status == 0, "\(evicted.stderr)")
    }

    @Test func anUnknownCommandAndANegativeIntervalAreNamed() async throws {
        let store = try CLIStore()
        expectOneLineFailure(try await store.darkdisk(["foo"]), mentioning: "no such command 'foo'")
        let negative = try await store.darkdisk(["mount", store.directory + "/mnt", "--poll-interval", "-5"])
        expectOneLineFailure(negative, mentioning: "--poll-interval must be 0 (off) or between 0.5 and 86400 seconds")
    }

    /// As another user (root here drops to `nobody`), a store whose key folder is private: the key is named
    /// as unreachable, with its cause, not as missing.
    @Test(.enabled(if: getuid() == 0, "needs root, to run a command as another user"))
    func aKeyThatCannotBeReadIsNotCalledMissing() async throws {
        let store = try CLIStore()
        #expect(try await store.darkdisk(["init"]).status == 0)
        chmod(store.directory, 0o755)
        chmod(store.storePath, 0o755)
        for command in [["status"], ["init"]] {
            let run = try await Shell.run("/usr/bin/setpriv", ["--reuid", "65534", "--regid", "65534", "--clear-groups", Shell.darkdisk] + command + ["--store", store.storePath])
            expectOneLineFailure(run, mentioning: "cannot reach the store's key file \(store.storePath)/config/master.key: Permission denied")
        }
    }

    /// An `init` that fails part-way (its data folder cannot be made) leaves nothing it made: a key left
    /// behind made the next `init` refuse, or open a store that was not there. The mount daemon's log that
    /// cannot be opened is named with its path.
    @Test(.enabled(if: getuid() == 0, "needs root, to run a command as another user"))
    func aFailedInitLeavesNothingAndAnUnopenableLogIsNamed() async throws {
        let store = try CLIStore()
        let home = store.directory + "/nobody"
        try FileManager.default.createDirectory(atPath: home + "/locked", withIntermediateDirectories: true)
        chmod(store.directory, 0o755)
        #expect(chown(home, 65534, 65534) == 0)
        chmod(home + "/locked", 0o555)
        func asNobody(_ arguments: [String], data: String) async throws -> Run {
            try await Shell.run("/usr/bin/setpriv", ["--reuid", "65534", "--regid", "65534", "--clear-groups", "/usr/bin/env",
                                                    "HOME=" + home, "XDG_DATA_HOME=" + data, Shell.darkdisk] + arguments)
        }
        expectOneLineFailure(try await asNobody(["init"], data: home + "/locked/data"), mentioning: "/locked/data: Permission denied")
        #expect(!FileManager.default.fileExists(atPath: home + "/.config"), "a failed init left its key folder")
        let made = try await asNobody(["init"], data: home + "/data")
        #expect(made.status == 0, "the next init: \(made.stderr)")

        let other = try CLIStore()
        #expect(try await other.darkdisk(["init"]).status == 0)
        try FileManager.default.createDirectory(atPath: other.storePath + "/data/darkdisk.log", withIntermediateDirectories: true)
        let mount = try await other.darkdisk(["mount", other.directory + "/mnt"])
        expectOneLineFailure(mount, mentioning: "cannot open the mount daemon's log \(other.storePath)/data/darkdisk.log: Is a directory")
    }

    /// `check` beside a mount that uploads (and so moves each file from the persistent folder to the cache
    /// pool's) reports nothing that does not exist: a cron health check never alerts falsely. (It reported
    /// tens of "… is missing" while the uploads ran.)
    @Test func checkBesideAnUploadingMountFindsNoFalseProblem() async throws {
        let (store, mount, files) = try await DriveWriteTests.mounted()
        defer { withExtendedLifetime(mount) {} }
        try await DriveWriteTests.sh("mkdir \(Shell.quote(files))/many && cd \(Shell.quote(files))/many && for i in $(seq 1 400); do echo \"file $i\" > f$i; done")
        var checks = 0
        while checks < 12 {
            let check = try await store.darkdisk(["check"])
            #expect(check.status == 0, "check \(checks): \(check.output)\(check.stderr)")
            checks += 1
            if check.status != 0 { break }
        }
        let synced = await eventually(within: 120) {
            (try? Shell.run("/usr/bin/getfattr", ["--only-values", "-n", "user.darkdisk.sync", files + "/many/f400"]).output) == "synced"
        }
        #expect(synced)
        #expect(try await store.darkdisk(["check"]).status == 0)
    }

    /// A damaged local copy of a node the remote has is repaired by `fetch`, pinned (persistent) or not: it
    /// is downloaded again. (`fetch --persistent` exited 0 and repaired nothing.)
    @Test func fetchRepairsADamagedLocalCopy() async throws {
        let remote = try RemoteBucket()
        let data = CLIStore.bytes(200_000, seed: 17)
        try remote.push("n", data)
        let pass = ["--passphrase-file", remote.passphrase]
        let store = remote.a
        #expect(try await store.darkdisk(["persist", "--node", "n", "on"] + pass).status == 0)
        let persistent = store.storePath + "/data/files"
        var paths: [String] = []
        for shard in try FileManager.default.contentsOfDirectory(atPath: persistent) {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: persistent + "/" + shard)) ?? [] {
                paths.append(persistent + "/" + shard + "/" + name)
            }
        }
        let stored = try #require(paths.first)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: stored))
        try handle.seek(toOffset: 100_000)
        let read = try handle.read(upToCount: 1)
        let byte = try #require(read?.first)
        try handle.seek(toOffset: 100_000)
        try handle.write(contentsOf: Data([byte ^ 0x10]))
        try handle.close()
        #expect(try await store.darkdisk(["export", "--node", "n"] + pass).status != 0, "the damage is seen")
        let fetched = try await store.darkdisk(["fetch", "--node", "n", "--persistent"] + pass)
        #expect(fetched.status == 0 && fetched.stderr.contains("does not authenticate"), "\(fetched.stderr)")
        #expect(try await store.darkdisk(["export", "--node", "n"] + pass).stdout == data)
        #expect(try await store.darkdisk(["check", "--full"] + pass).status == 0)
    }

    /// A mount's pulls beside its own uploads of new files log no "record gone without a tombstone" (the pull
    /// read what the store knew after listing the bucket, so a node uploaded in between looked deleted by
    /// the bucket: 394 such lines for one burst of files).
    @Test func pullsBesideTheStoresOwnUploadsReportNoVanishedRecord() async throws {
        let setup = try RemoteBucket()
        let mount = try Mount(setup.a, options: ["--passphrase-file", setup.passphrase, "--poll-interval", "0.5"])
        let files = mount.path + "/files"
        try await DriveWriteTests.sh("mkdir \(Shell.quote(files))/new && cd \(Shell.quote(files))/new && for i in $(seq 1 300); do echo \"file $i\" > f$i; done")
        let synced = await eventually(within: 120) {
            (try? Shell.run("/usr/bin/getfattr", ["--only-values", "-n", "user.darkdisk.sync", files + "/new/f300"]).output) == "synced"
        }
        #expect(synced)
        try await Task.sleep(nanoseconds: 2_000_000_000)
        let false_ = mount.log.split(separator: "\n").filter { $0.contains("without a tombstone") }
        #expect(false_.isEmpty, "\(false_.count) lines, the first: \(false_.first ?? "")")
    }
}
