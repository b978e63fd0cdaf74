import DarkDiskStore
import DarkDiskCrypto
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Fault run: `kill -9` of CLI commands and of the mount daemon at random moments during
/// imports, downloads, migrations and evictions. After every round the invariants hold: `darkdisk check`
/// finds the index and the disk in agreement, every node that reads back reads its own bytes (never
/// another version, never garbage), persistent files are intact, and a file this process holds (a retain
/// token, as an open file on the mount holds one) was never deleted however hard the pool was evicted.
/// Rounds: `DARKDISK_FAULT_ROUNDS` (Scripts/test --long runs 200); the default keeps the suite short.
@Suite(.processSlots) struct FaultRunTests {
    static let rounds = Int(ProcessInfo.processInfo.environment["DARKDISK_FAULT_ROUNDS"] ?? "") ?? 12

    @Test func killNineAtRandomMomentsKeepsTheInvariants() async throws {
        // One store without a passphrase (so a command starts in milliseconds and the kill lands in its
        // work, not in scrypt) and a file:// bucket it pushes to: pushed nodes are remote-only here.
        let b = try CLIStore()
        let bucket = b.directory + "/bucket"
        try FileManager.default.createDirectory(atPath: bucket, withIntermediateDirectories: true)
        try await RemoteBucket.check(try b.darkdisk(["init", "--remote", "file://" + bucket]), "init")
        var random = SplitMix64(seed: UInt64(ProcessInfo.processInfo.environment["DARKDISK_FAULT_SEED"] ?? "") ?? 8)
        // Remote nodes big enough that a download is still running when the kill comes.
        var contents: [String: Data] = [:]
        for index in 0..<3 {
            let id = "remote-\(index)"
            contents[id] = CLIStore.bytes(24 << 20, seed: 100 + UInt64(index))
            try await RemoteBucket.check(try b.darkdisk(["push", try b.file("push-" + id, contents[id]!), "--node", id]), "push \(id)")
        }
        // Persistent nodes that no round touches: they must stay intact throughout.
        for index in 0..<2 {
            let id = "keep-\(index)"
            contents[id] = CLIStore.bytes(2_000_000, seed: 200 + UInt64(index))
            try await RemoteBucket.check(try b.darkdisk(["import", try b.file(id, contents[id]!), "--node", id, "--persistent"]), "import \(id)")
        }
        // A cache file this process holds open for the whole run.
        let held = CLIStore.bytes(3_000_000, seed: 300)
        try await RemoteBucket.check(try b.darkdisk(["import", try b.file("held", held), "--node", "held"]), "import held")
        let library = try b.manager()
        let holder = try await #require(try library.files.nodeFile(NodeID("held")))
        // Sources for the imports of the rounds, one per node ID, so any copy that reads back is checkable.
        for index in 0..<4 {
            let id = "import-\(index)"
            contents[id] = CLIStore.bytes(16 << 20, seed: 400 + UInt64(index))
            _ = try b.file(id, contents[id]!)
        }
        let pass = ["--store", b.storePath]

        var kinds: [String: Int] = [:]
        var killedMidway = 0
        // How long each kind of command ran when it finished before its kill: the next kill of that kind
        // comes at a random point of that span, so kills land mid-work on a fast machine as on a slow one.
        var runtimes = ["import": 0.4, "download": 0.4, "migration": 0.1, "eviction": 0.1]
        for round in 0..<Self.rounds {
            let fraction = Double(random.next() % 1000) / 1000
            let delay = fraction * 0.4
            let kind: String
            switch random.next() % 5 {
            case 0:
                kind = "import"
                let id = "import-\(random.next() % 4)"
                let mode = random.next() % 2 == 0 ? ["--persistent"] : []
                killedMidway += await KillMidway.run(["import", b.directory + "/" + id, "--node", id] + mode + pass, at: fraction, of: &runtimes[kind]!, in: b.directory)
            case 1:
                kind = "download"
                let id = "remote-\(random.next() % 3)"
                _ = try await b.darkdisk(["delete", "--node", id])
                killedMidway += await KillMidway.run(["fetch", "--node", id, "--part-size", "1048576"] + pass, at: fraction, of: &runtimes[kind]!, in: b.directory)
            case 2:
                kind = "migration"
                let id = ["import-0", "import-1", "remote-0", "remote-1", "held"][Int(random.next() % 5)]
                killedMidway += await KillMidway.run(["persist", "--node", id, random.next() % 2 == 0 ? "on" : "off"] + pass, at: fraction, of: &runtimes[kind]!, in: b.directory)
            case 3:
                kind = "eviction"
                _ = try await b.darkdisk(["config", "set", "pool.data.max_size", "1G"])
                killedMidway += await KillMidway.run(["config", "set", "pool.data.max_size", "0"] + pass, at: fraction, of: &runtimes[kind]!, in: b.directory)
            default:
                kind = "daemon"
                let mount = try Mount(b)
                let id = "remote-\(random.next() % 3)"
                let reader = try Background("exec cat \(Shell.quote(mount.path + "/nodes/\(id)/data")) > /dev/null", in: b.directory)
                try? await Task.sleep(nanoseconds: UInt64((delay) * 1e9))
                if let daemon = MountDaemon.pid(serving: mount.path), kill(daemon, SIGKILL) == 0 { killedMidway += 1 }
                _ = await reader.wait(seconds: 30)
                if Mount.isMounted(mount.path) { _ = try Shell.sh("fusermount3 -u -z \(Shell.quote(mount.path))", timeout: 30) }
            }
            kinds[kind, default: 0] += 1

            // The invariants, after every crash.
            let check = try await b.darkdisk(["check"])
            #expect(check.status == 0, "round \(round) (\(kind)): \(check.output) \(check.stderr)")
            for (id, data) in contents.sorted(by: { $0.key < $1.key }) {
                guard let stored = try await library.files.nodeFile(NodeID(id)) else {
                    #expect(!id.hasPrefix("keep-"), "round \(round) (\(kind)): persistent node \(id) is gone")
                    continue
                }
                let reader = try CryptoFileReader(path: stored.cryptoFile.path, key: stored.cryptoFile.key)
                let bytes = try reader.read(section: reader.dataSection, offset: 0, count: Int(reader.plaintextSize(ofSection: reader.dataSection)))
                #expect(Data(bytes) == data, "round \(round) (\(kind)): node \(id) read back other bytes")
            }
            let heldBytes = try FileConversion.decryptIntoMemory(path: holder.cryptoFile.path, key: holder.cryptoFile.key)
            #expect(heldBytes == held, "round \(round) (\(kind)): the held file changed or went")
            if check.status != 0 { break }
        }
        withExtendedLifetime(holder) {}
        #expect(Self.rounds < 10 || killedMidway > Self.rounds / 4, "most kills came after the work was done: \(killedMidway)")
        print("fault run: \(Self.rounds) rounds, \(killedMidway) killed in the middle: \(kinds.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
    }
}
