import DarkDiskStore
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Judges that no one here wrote: a model-based random test (Hypothesis's stateful testing, in
/// the spirit of fsx), Debian's `stress-ng` file-system stressors and `dbench`, `kill -9` of the daemon
/// while files are written, and two mounts on one bucket.
@Suite(.processSlots) struct DriveLoadTests {
    static let tools = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().path + "/Tools"
    static let environment = ProcessInfo.processInfo.environment

    @Test func randomWritesTruncatesAndReadsAgreeWithATmpfsFile() async throws {
        let (_, mount, files) = try await DriveWriteTests.mounted()
        defer { withExtendedLifetime(mount) {} }
        let model = try FileManager.default.url(for: .itemReplacementDirectory, in: .userDomainMask,
                                                appropriateFor: URL(fileURLWithPath: "/dev/shm"), create: true).path
        defer { try? FileManager.default.removeItem(atPath: model) }
        let operations = Self.environment["DARKDISK_FSX_OPERATIONS"] ?? "10000"
        let run = try await Shell.run("/usr/bin/env", ["python3", Self.tools + "/drive-fsx.py", files, model, operations])
        #expect(run.status == 0, "\(run.output)\n\(run.stderr)\n\(mount.log)")
        await #expect(try Shell.sh("ls -A \(Shell.quote(files))").output == "", "every file the test made was removed")
    }

    @Test func stressNgAndDbenchRunCleanAndTheStoreChecksClean() async throws {
        let (store, mount, files) = try await DriveWriteTests.mounted()
        let seconds = Self.environment["DARKDISK_STRESS_SECONDS"] ?? "20"
        try await DriveWriteTests.sh("mkdir \(Shell.quote(files + "/stress")) \(Shell.quote(files + "/dbench"))")
        let stress = try await Shell.sh("""
            stress-ng --hdd 1 --hdd-bytes 32M --dir 1 --rename 1 --dentry 1 --utime 1 --chmod 1 --timeout \(seconds)s \
              --temp-path \(Shell.quote(files + "/stress")) --metrics-brief 2>&1
            """)
        #expect(stress.status == 0 && stress.output.contains("successful run completed"), "\(stress.output)\n\(mount.log)")
        let dbench = try await Shell.sh("dbench -D \(Shell.quote(files + "/dbench")) -t \(seconds) 2 2>&1")
        #expect(dbench.status == 0 && dbench.output.contains("Throughput"), "\(dbench.output)")
        // dbench 4.00 prints "failed to create barrier semaphore" whenever the kernel hands it semaphore ID 0
        // (it tests the ID with `!`), i.e. on a machine's first run: its own quirk, not the file system's.
        let dbenchLines = dbench.output.split(separator: "\n").filter { !$0.contains("barrier semaphore") }
        #expect(!dbenchLines.contains { $0.contains("failed") || $0.contains("ERROR") }, "\(dbench.output)")
        // No error line from the daemon: the stressors' refused calls are the documented EPERMs, not logged.
        let errors = mount.log.split(separator: "\n").filter { $0.contains(" error ") || $0.contains("critical") }
        #expect(errors.isEmpty, "\(errors.joined(separator: "\n"))")
        try await DriveWriteTests.sh("fusermount3 -u \(Shell.quote(mount.path))")
        let check = try await store.darkdisk(["check", "--full"])
        #expect(check.status == 0, "\(check.output)\n\(check.stderr)")
    }

    /// The content round `round` writes to file `index` (a size that varies, so versions differ in length).
    static func content(round: Int, index: Int) -> String {
        "round \(round) file \(index) " + String(repeating: "x", count: (round * 7919 + index * 104_729) % 150_000)
    }

    @Test func killNineDuringWritesLosesNoClosedFileAndMixesNoVersions() async throws {
        let store = try CLIStore()
        try await RemoteBucket.check(try store.darkdisk(["init"]), "init")
        let rounds = Int(Self.environment["DARKDISK_DRIVE_KILL_ROUNDS"] ?? "") ?? 50
        var random = SplitMix64(seed: 1919)
        // Every content each name ever had, and the one whose close returned last.
        var versions: [String: Set<String>] = [:]
        var closed: [String: String] = [:]
        var killedMidway = 0
        for round in 0..<rounds {
            let mount = try Mount(store)
            let files = mount.path + "/files"
            let log = store.directory + "/closed-\(round).log"
            // Each file is written and closed, then named in the log (so the log lists only closes that
            // returned); names repeat across rounds, so a file has an old version to keep.
            // (`cp`: one open, writes, one close. A shell's `> name` also closes a duplicate of the descriptor
            // before writing, and a close commits: the truncated file, as on any disk.)
            let sources = store.directory + "/round-\(round)"
            try FileManager.default.createDirectory(atPath: sources, withIntermediateDirectories: true)
            // (Never anywhere else: a writer that could not enter the drive writes nothing.)
            var script = "cd \(Shell.quote(files)) || exit 1\n"
            for index in 0..<40 {
                let name = "f\(index % 12)"
                let text = Self.content(round: round, index: index)
                versions[name, default: []].insert(text)
                try Data(text.utf8).write(to: URL(fileURLWithPath: "\(sources)/\(index)"))
                script += "cp \(Shell.quote("\(sources)/\(index)")) \(name) && echo \(name) \(index) >> \(Shell.quote(log)) || exit 0\n"
            }
            let scriptFile = try store.file("writer-\(round).sh", Data(script.utf8))
            let writer = try Background("sh \(Shell.quote(scriptFile))", in: store.directory)
            try? await Task.sleep(nanoseconds: UInt64(random.next() % 600) * 1_000_000)
            if let daemon = MountDaemon.pid(serving: mount.path), kill(daemon, SIGKILL) == 0 { killedMidway += 1 }
            _ = await writer.wait(seconds: 30)
            if Mount.isMounted(mount.path) { _ = try await Shell.sh("fusermount3 -u -z \(Shell.quote(mount.path))") }
            let logged = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            for line in logged.split(separator: "\n") {
                let parts = line.split(separator: " ")
                closed[String(parts[0])] = Self.content(round: round, index: Int(parts[1])!)
            }
            // Remounted, every file reads as the version whose close returned last, or a later one written
            // in this round before the kill (never a mix, never older).
            let again = try Mount(store)
            for (name, all) in versions {
                let path = again.path + "/files/" + name
                guard let data = FileManager.default.contents(atPath: path) else {
                    #expect(closed[name] == nil, "round \(round): \(name) was closed but is gone")
                    continue
                }
                let text = String(decoding: data, as: UTF8.self)
                #expect(text.isEmpty || all.contains(text), "round \(round): \(name) holds a mix (\(data.count) bytes)")
                if let last = closed[name], text != last {
                    // Only a newer write of this round (started after that close) may have replaced it.
                    #expect(text.hasPrefix("round \(round) "), """
                        round \(round): \(name) lost the version whose close returned; the daemons' log ends:
                        \(again.log.split(separator: "\n").suffix(30).joined(separator: "\n"))
                        """)
                }
                // What the store holds now is the old version the next round must keep (a write whose close
                // never returned may still have committed before the kill).
                if !text.isEmpty { closed[name] = text }
            }
            if let daemon = MountDaemon.pid(serving: again.path) { kill(daemon, SIGKILL) }
            if Mount.isMounted(again.path) { _ = try await Shell.sh("fusermount3 -u -z \(Shell.quote(again.path))") }
        }
        #expect(killedMidway >= rounds / 2, "the kill landed while the daemon ran in \(killedMidway) of \(rounds) rounds")
        let check = try await store.darkdisk(["check"])
        #expect(check.status == 0, "\(check.output)\n\(check.stderr)")
    }

    /// A folder the kernel has listed keeps that listing until told: a file that arrives in it by a pull must
    /// show in the next `ls` (the kernel resets a cached listing when a name it knows changes, not for a new one).
    @Test func aFilePulledIntoAListedFolderShowsInTheNextListing() async throws {
        let (_, mountA, mountB) = try Self.twoMounts()
        let (filesA, filesB) = (mountA.path + "/files", mountB.path + "/files")
        try FileManager.default.createDirectory(atPath: filesA + "/shared", withIntermediateDirectories: false)
        #expect(await eventually(within: 30) { FileManager.default.fileExists(atPath: filesB + "/shared") }, "\(mountB.log)")
        // B lists it (empty) twice: the kernel keeps that listing.
        for _ in 0..<2 { #expect(try FileManager.default.contentsOfDirectory(atPath: filesB + "/shared") == []) }
        try Data("from A".utf8).write(to: URL(fileURLWithPath: filesA + "/shared/new.txt"))
        #expect(await eventually(within: 30) {
            (try? FileManager.default.contentsOfDirectory(atPath: filesB + "/shared")) == ["new.txt"]
        }, "B's listing: \((try? FileManager.default.contentsOfDirectory(atPath: filesB + "/shared")) ?? [])\n\(mountB.log)")
        #expect(FileManager.default.contents(atPath: filesB + "/shared/new.txt") == Data("from A".utf8))
    }

    /// Stores A and B on one file bucket, each mounted and pulling every second.
    static func twoMounts() throws -> (RemoteBucket, Mount, Mount) {
        let setup = try RemoteBucket()
        try setup.join("file://" + setup.bucket)
        let mountA = try Mount(setup.a, options: ["--passphrase-file", setup.passphrase, "--poll-interval", "1"])
        return (setup, mountA, try setup.mountB(["--poll-interval", "1"]))
    }

    @Test func twoMountsOnOneBucketSeeEachOthersFiles() async throws {
        let (_, mountA, mountB) = try Self.twoMounts()
        let (filesA, filesB) = (mountA.path + "/files", mountB.path + "/files")
        let report = CLIStore.bytes(300_000, seed: 5)
        try await DriveWriteTests.sh("mkdir \(Shell.quote(filesA + "/shared")) && touch -d '2022-02-02 02:02:02' \(Shell.quote(filesA + "/shared"))")
        try report.write(to: URL(fileURLWithPath: filesA + "/shared/report.bin"))
        #expect(await eventually(within: 30) { FileManager.default.contents(atPath: filesB + "/shared/report.bin") == report },
                "A's file reaches B after its upload and B's next poll\n\(mountA.log)\n\(mountB.log)")
        // B renames and changes it; A sees both.
        try await DriveWriteTests.sh("mv \(Shell.quote(filesB + "/shared/report.bin")) \(Shell.quote(filesB + "/shared/final.bin")) && chmod 600 \(Shell.quote(filesB + "/shared/final.bin"))")
        #expect(await eventually(within: 30) {
            FileManager.default.contents(atPath: filesA + "/shared/final.bin") == report && !FileManager.default.fileExists(atPath: filesA + "/shared/report.bin")
        }, "B's rename reaches A\n\(mountA.log)\n\(mountB.log)")
        await #expect(try Shell.sh("stat -c %a \(Shell.quote(filesA + "/shared/final.bin"))").output == "600\n")
        // Both change it at once: one version keeps the name, the other is a conflict copy beside it.
        let (fromA, fromB) = (CLIStore.bytes(1000, seed: 6), CLIStore.bytes(2000, seed: 7))
        try fromA.write(to: URL(fileURLWithPath: filesA + "/shared/final.bin"))
        try fromB.write(to: URL(fileURLWithPath: filesB + "/shared/final.bin"))
        #expect(await eventually(within: 60) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: filesA + "/shared")) ?? []
            let contents = Set(names.compactMap { FileManager.default.contents(atPath: filesA + "/shared/" + $0) })
            return names.count == 2 && contents == [fromA, fromB]
        }, "a conflict copy beside the original on A: \((try? FileManager.default.contentsOfDirectory(atPath: filesA + "/shared")) ?? [])")
        #expect(await eventually(within: 60) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: filesB + "/shared")) ?? []
            return names.count == 2 && Set(names.compactMap { FileManager.default.contents(atPath: filesB + "/shared/" + $0) }) == [fromA, fromB]
        }, "and on B\n\(mountB.log)")
        // A delete on one reaches the other.
        try await DriveWriteTests.sh("ls -la \(Shell.quote(filesA + "/shared")) \(Shell.quote(filesB + "/shared")); rm -r \(Shell.quote(filesA + "/shared"))")
        #expect(await eventually(within: 30) { !FileManager.default.fileExists(atPath: filesB + "/shared") }, "\(mountB.log)")
    }
}
