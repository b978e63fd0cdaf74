import DarkDiskStore
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `kill -9` of `darkdisk sync` and of the mount daemon while they upload the queue, at random
/// moments. After every round the store checks clean; at the end one `sync` drains the queue, `check
/// --remote` passes, and every node reads back, from the remote, as the last version queued for it.
/// Rounds: `DARKDISK_SYNC_KILL_ROUNDS` (Scripts/test --long runs 60); the default keeps the suite short.
@Suite(.processSlots) struct SyncKillTests {
    static let rounds = Int(ProcessInfo.processInfo.environment["DARKDISK_SYNC_KILL_ROUNDS"] ?? "") ?? 10

    @Test func killNineWhileUploadingLosesNoQueuedChange() async throws {
        // No passphrase, so a command starts in milliseconds and the kill lands in its upload, not in scrypt.
        let store = try CLIStore()
        let bucket = store.directory + "/bucket"
        try FileManager.default.createDirectory(atPath: bucket, withIntermediateDirectories: true)
        try await RemoteBucket.check(try store.darkdisk(["init", "--remote", "file://" + bucket]), "init")
        var random = SplitMix64(seed: 1818)
        var latest: [String: Data] = [:]
        var killedMidway = 0
        var runtime = 0.5
        for round in 0..<Self.rounds {
            let id = "node-\(random.next() % 3)"
            let data = CLIStore.bytes(6 << 20, seed: 5000 + UInt64(round))
            let source = try store.file("round-\(round)", data)
            try await RemoteBucket.check(try store.darkdisk(["push", source, "--node", id, "--name", "\(id).bin", "--no-wait"]), "push \(id)")
            try FileManager.default.removeItem(atPath: source)
            latest[id] = data
            let fraction = Double(random.next() % 1000) / 1000
            if random.next() % 4 == 0 {
                // The mount daemon drains the queue within a second of starting; kill it at some point of that.
                let mount = try Mount(store)
                try? await Task.sleep(nanoseconds: UInt64(fraction * 1.5e9))
                if let daemon = MountDaemon.pid(serving: mount.path), kill(daemon, SIGKILL) == 0 { killedMidway += 1 }
                if Mount.isMounted(mount.path) { _ = try Shell.sh("fusermount3 -u -z \(Shell.quote(mount.path))", timeout: 30) }
            } else {
                killedMidway += await KillMidway.run(["sync", "--store", store.storePath], at: fraction, of: &runtime, in: store.directory)
            }
            let check = try await store.darkdisk(["check"])
            #expect(check.status == 0, "round \(round): \(check.output) \(check.stderr)")
            if check.status != 0 { break }
        }

        let sync = try await store.darkdisk(["sync"])
        #expect(sync.status == 0, "\(sync.output) \(sync.stderr)")
        let status = try await store.darkdisk(["status", "--json"])
        let json = try #require(try JSONSerialization.jsonObject(with: status.stdout) as? [String: Any])
        #expect((json["uploads"] as? [Any])?.isEmpty == true, "the queue did not drain: \(status.output)")
        let remoteCheck = try await store.darkdisk(["check", "--remote"])
        #expect(remoteCheck.status == 0, "\(remoteCheck.output) \(remoteCheck.stderr)")
        // Read from the remote: local copies go first.
        for (id, data) in latest.sorted(by: { $0.key < $1.key }) {
            try await RemoteBucket.check(try store.darkdisk(["delete", "--node", id]), "delete \(id)")
            let out = store.directory + "/\(id).out"
            try await RemoteBucket.check(try store.darkdisk(["export", "--node", id, "--output", out]), "export \(id)")
            #expect(FileManager.default.contents(atPath: out) == data, "\(id) does not read as its last queued version")
        }
        #expect(Self.rounds < 10 || killedMidway > Self.rounds / 4, "most kills came after the work was done: \(killedMidway)")
        print("sync kill run: \(Self.rounds) rounds, \(killedMidway) killed in the middle")
    }
}
