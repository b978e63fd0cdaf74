import DarkDiskStore
import DarkDiskCloud
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// Sync test as two machines really are: two stores, each driven only by `darkdisk` processes,
/// one bucket. Each round both stores act at the same moment (push a new version of one of three nodes,
/// delete one everywhere, or pull). At the end, after both sync and pull: `check --remote` passes on both,
/// both list the same nodes with the same bytes, every push that exited 0 landed and every push that exited
/// 3 left a conflict copy holding exactly its bytes: nothing lost, counted. Over `file://`, moto, and Ceph
/// RGW with `DARKDISK_TEST_RGW`. Rounds: `DARKDISK_TWO_PROCESS_ROUNDS`, default 40 (`Scripts/test --long` runs 100).
@Suite(.processSlots) struct TwoProcessSyncTests {
    static let rounds = Int(ProcessInfo.processInfo.environment["DARKDISK_TWO_PROCESS_ROUNDS"] ?? "") ?? 40

    /// One `darkdisk` process's outcome.
    struct Run { let status: Int32; let output: String }

    /// Two CLI stores sharing a bucket of `kind` (its server stays up while the value lives).
    final class Machines {
        let directory = NSTemporaryDirectory() + "darkdisk-two-process-" + UUID().uuidString
        let passphrase = "two machines, one bucket"
        var environment = ProcessInfo.processInfo.environment
        private var server: AnyObject?
        let url: String

        init(_ kind: ConditionalWriteTests.Kind) async throws {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let passphraseFile = directory + "/passphrase"
            try Data(passphrase.utf8).write(to: URL(fileURLWithPath: passphraseFile))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: passphraseFile)
            environment["DARKDISK_PASSPHRASE_FILE"] = passphraseFile
            environment.removeValue(forKey: "DARKDISK_STORE")
            switch kind {
            case .file:
                let bucket = directory + "/bucket"
                try FileManager.default.createDirectory(atPath: bucket, withIntermediateDirectories: true)
                url = "file://" + bucket
            case .s3, .rgw:
                let s3 = try S3TestServer(kind)
                let credentials = s3.anyCredentials
                environment["AWS_ACCESS_KEY_ID"] = credentials.accessKeyID
                environment["AWS_SECRET_ACCESS_KEY"] = credentials.secretAccessKey
                _ = try await s3.remote(prefix: "shared", credentials: credentials)  // creates the bucket
                url = "s3://darkdisk/shared?endpoint=\(s3.endpoint)"
                server = s3
            }
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        func store(_ name: String) -> String { directory + "/" + name }

        /// Starts `darkdisk ARGS --store STORE`; `finish` waits for it.
        func start(_ store: String, _ arguments: [String]) throws -> (pid: pid_t, output: String) {
            let output = directory + "/out-" + UUID().uuidString
            let pid = try ChildProcess.spawn(DarkDiskBinary.path, arguments + ["--store", self.store(store)], environment: environment,
                                             stdout: output, stderr: output)
            return (pid, output)
        }

        func finish(_ started: (pid: pid_t, output: String)) async -> Run {
            let status = await ChildProcess.exitStatus(started.pid)
            defer { try? FileManager.default.removeItem(atPath: started.output) }
            return Run(status: status, output: (try? String(contentsOfFile: started.output, encoding: .utf8)) ?? "")
        }

        func darkdisk(_ store: String, _ arguments: [String]) async throws -> Run {
            await finish(try start(store, arguments))
        }
    }

    @Test(arguments: ConditionalWriteTests.Kind.allCases) func twoProcessesEditingTheSameNodesLoseNothing(_ kind: ConditionalWriteTests.Kind) async throws {
        let machines = try await Machines(kind)
        let initA = try await machines.darkdisk("a", ["init", "--remote", machines.url, "--scrypt-log-n", "10"])
        try #require(initA.status == 0, "\(initA.output)")
        let initB = try await machines.darkdisk("b", ["init", "--remote", machines.url, "--scrypt-log-n", "10"])
        try #require(initB.status == 0, "\(initB.output)")

        var random = SplitMix64(seed: 2026 + UInt64(kind.rawValue.utf8.count))
        var landed: [String: [Data]] = [:]  // node → versions whose push exited 0
        var copies: [Data] = []             // versions whose push exited 3 (a conflict copy)
        var written = 0, deletes = 0, refusedDeletes = 0
        for round in 0..<Self.rounds {
            var actions: [(store: String, arguments: [String], node: String, version: Data?)] = []
            for store in ["a", "b"] {
                let node = "node-\(random.next() % 3)"
                switch random.next() % 6 {
                case 0:
                    actions.append((store, ["delete", "--node", node, "--remote"], node, nil))
                case 1:
                    actions.append((store, ["pull"], node, nil))
                default:
                    let version = Data("\(store) round \(round) \(node)\n".utf8) + CloudTests.bytes(Int(random.next() % 50_000), seed: random.next())
                    let file = machines.directory + "/\(store)-\(round)"
                    try version.write(to: URL(fileURLWithPath: file))
                    actions.append((store, ["push", file, "--node", node, "--name", node + ".bin"], node, version))
                }
            }
            // Both at once: two machines acting on one bucket.
            let started = try actions.map { try machines.start($0.store, $0.arguments) }
            var runs: [Run] = []
            for process in started { runs.append(await machines.finish(process)) }
            for (action, run) in zip(actions, runs) {
                let what = "round \(round), \(action.store): \(action.arguments.prefix(3).joined(separator: " "))"
                if let version = action.version {
                    written += 1
                    switch run.status {
                    case 0: landed[action.node, default: []].append(version)
                    case 3:
                        copies.append(version)
                        #expect(run.output.contains("conflict"), "\(what): \(run.output)")
                    default: Issue.record("\(what) exited \(run.status): \(run.output)")
                    }
                } else if action.arguments[0] == "delete" {
                    if run.status == 0 {
                        deletes += 1
                    } else {
                        // Refused: the node changed since this store last saw it, or it never saw it.
                        refusedDeletes += 1
                        #expect(run.status == 1 && run.output.split(separator: "\n").count == 1, "\(what): \(run.output)")
                    }
                } else {
                    #expect(run.status == 0, "\(what): \(run.output)")
                }
            }
        }

        for store in ["a", "b", "a", "b"] {
            for command in [["sync"], ["pull"]] {
                let run = try await machines.darkdisk(store, command)
                #expect(run.status == 0, "\(store) \(command[0]): \(run.output)")
            }
        }
        for store in ["a", "b"] {
            let check = try await machines.darkdisk(store, ["check", "--remote"])
            #expect(check.status == 0, "\(store): \(check.output)")
        }

        // Both list the same nodes, each with the same bytes, read from the remote.
        var outlines: [String: [OutlineEntry]] = [:]
        for store in ["a", "b"] {
            let manager = try DiskManager(location: StoreLocation.resolve(store: machines.store(store)), passphrase: Array(machines.passphrase.utf8))
            outlines[store] = try await manager.outline.entries().sorted { $0.nodeID.rawValue < $1.nodeID.rawValue }
        }
        let nodesA = outlines["a"]!.map(\.nodeID.rawValue), nodesB = outlines["b"]!.map(\.nodeID.rawValue)
        #expect(nodesA == nodesB, "the two stores list different nodes")
        var found: [String: Data] = [:]
        for entry in outlines["a"]! {
            var contents: [Data?] = []
            for store in ["a", "b"] {
                let out = machines.directory + "/export-\(store)-\(entry.nodeID.rawValue)"
                let run = try await machines.darkdisk(store, ["export", "--node", entry.nodeID.rawValue, "--output", out])
                #expect(run.status == 0, "export \(entry.nodeID) on \(store): \(run.output)")
                contents.append(FileManager.default.contents(atPath: out))
            }
            #expect(contents[0] != nil && contents[0] == contents[1], "node \(entry.nodeID) reads differently on the two stores")
            found[entry.nodeID.rawValue] = contents[0]
        }

        // Nothing lost: each base node holds one of its landed versions; the conflict copies hold exactly the
        // versions whose push exited 3.
        for (node, versions) in landed.sorted(by: { $0.key < $1.key }) {
            if let content = found[node] { #expect(versions.contains(content), "\(node) holds a version no push landed") }
        }
        let copyNodes = outlines["a"]!.filter { $0.name?.contains("(conflict ") == true }
        let copyContents = copyNodes.compactMap { found[$0.nodeID.rawValue] }
        #expect(copyContents.count == copies.count && copies.allSatisfy { copyContents.contains($0) },
                "\(copies.count) pushes made a conflict copy, \(copyNodes.count) copies are listed")
        let landedCount = landed.values.map(\.count).reduce(0, +)
        #expect(written == landedCount + copies.count)
        #expect(written > Self.rounds / 2)
        print("two processes over \(kind): \(Self.rounds) rounds, \(written) versions written, \(landedCount) landed, \(copies.count) conflict copies, \(deletes) deletes, \(refusedDeletes) refused deletes")
    }
}
