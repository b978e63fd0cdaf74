import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Whoever can write the bucket but has no key swaps two nodes' records, alters a byte of
/// one, or replays a node's older record. The mount daemon's poller refuses each (the record does not open
/// under the node's name, or is older than the generation the store applied), says so in one log line per
/// record, and the mount keeps serving what it had: the same listing, sizes and bytes, those of the newest
/// legitimate version. `check --remote` names each tampered record in one line and exits 1. Once the bucket
/// is restored, the next version another machine pushes is seen and read as usual.
/// (SealedRecordTests covers the same refusals on the library; these go through the daemon and FUSE.)
@Suite(.processSlots) struct BucketTamperMountTests {
    /// Store A pushes `x` (version 1) and `y`; store B joins over `file://`, mounts with a 1 s poll and
    /// reads both; A pushes `x` version 2, which B's poller applies and B reads. The bucket then holds
    /// `x` at generation 2 and `y` at generation 1; `olderX` is `x`'s generation 1 record, kept for a replay.
    final class Setup {
        let remote: RemoteBucket
        let x1 = CLIStore.bytes(150_001, seed: 181)
        let x2 = CLIStore.bytes(90_007, seed: 182)
        let x3 = CLIStore.bytes(120_011, seed: 183)
        let y = CLIStore.bytes(110_003, seed: 184)
        let olderX: Data
        /// The legitimate records, as A wrote them, by node.
        private(set) var legit: [String: Data] = [:]
        let mount: Mount
        /// How many lines the daemon's log had when the bucket was tampered with.
        private var linesBeforeTampering = 0

        init() async throws {
            remote = try RemoteBucket()
            try remote.push("x", x1)
            try remote.push("y", y)
            olderX = try Data(contentsOf: URL(fileURLWithPath: try remote.recordPath("x")))
            try remote.join("file://" + remote.bucket)
            mount = try remote.mountB(["--poll-interval", "1"])
            try expect(cat("x") == x1 && cat("y") == y, "B reads both nodes on demand")

            try remote.push("x", x2)
            // Applied, and that round logged: the poller writes its summary line after the outline, so a round
            // still finishing would otherwise log its change after the tampering began (seen on a busy machine).
            guard await eventually(within: 20, {
                (try? self.size("x")) == self.x2.count && self.mount.log.contains("pull: 0 new, 1 changed, 0 deleted")
            }) else {
                throw RemoteBucket.SetupFailed(message: "B's poller did not apply x's second version: \(mount.log.suffix(2000))")
            }
            try expect(cat("x") == x2, "B reads x's second version")
            for id in ["x", "y"] { legit[id] = try Data(contentsOf: URL(fileURLWithPath: try recordPath(id))) }
            try expect(legit["x"] != olderX, "the pushes wrote a new record")
        }

        private func expect(_ condition: Bool, _ message: String) throws {
            guard condition else { throw RemoteBucket.SetupFailed(message: message + ": " + mount.log.suffix(2000)) }
        }

        func recordPath(_ id: String) throws -> String { try remote.recordPath(id) }
        func dataPath(_ id: String) -> String { mount.path + "/nodes/\(id)/data" }

        /// `cat` of a node through the mount (bounded; a failure is an empty result).
        func cat(_ id: String) throws -> Data {
            let run = try Shell.sh("exec timeout -s KILL 30 cat \(Shell.quote(dataPath(id)))", timeout: 40)
            return run.status == 0 ? run.stdout : Data()
        }

        /// `cat` of node `id` gives `expected`. Compared here, not in `#expect`: a failing `==` of two large
        /// `Data` makes Swift Testing compute their difference, which takes minutes.
        func expectRead(_ id: String, _ expected: Data, sourceLocation: SourceLocation = #_sourceLocation) {
            let read = (try? cat(id)) ?? Data()
            let same = read == expected
            let which = [(x1, "x's first version"), (x2, "x's second version"), (x3, "x's third version"), (y, "y")]
                .first { $0.0 == read }?.1 ?? "none of the pushed contents"
            #expect(same, "cat of \(id): \(read.count) bytes, \(expected.count) expected (\(which))", sourceLocation: sourceLocation)
        }

        /// The node's size as the mount lists it.
        func size(_ id: String) throws -> Int? {
            Int(try Shell.sh("stat -c %s \(Shell.quote(dataPath(id)))", timeout: 30).output.trimmingCharacters(in: .whitespacesAndNewlines))
        }

        /// As a bucket writer: puts `data` as node `id`'s record in one rename, so the poller never sees
        /// the record missing (which would be a deletion, not a tampering) or half written.
        func plant(_ data: Data, as id: String) throws {
            let temporary = remote.bucket + "/planted-\(id).tmp"
            try data.write(to: URL(fileURLWithPath: temporary))
            let path = try recordPath(id)
            guard rename(temporary, path) == 0 else {
                throw RemoteBucket.SetupFailed(message: "rename to \(path): errno \(errno)")
            }
        }

        /// Notes where the daemon's log stands before the bucket is tampered with.
        func markTampering() { linesBeforeTampering = mount.log.split(separator: "\n").count }

        /// The daemon's log lines since `markTampering`.
        var linesSinceTampering: [Substring] { Array(mount.log.split(separator: "\n").dropFirst(linesBeforeTampering)) }

        /// The poller's refusals of node `id`'s record since the tampering, one log line each.
        func refusals(of id: String) -> [Substring] {
            linesSinceTampering.filter { $0.contains("pull skipped: the record of node '\(id)' ") }
        }

        /// Waits until the poller has refused the record of every node in `reasons` (at most 15 s), then for
        /// two more rounds (the poll interval is 1 s), in which a record still refused is not logged again.
        func waitForRefusals(_ reasons: [String: String]) async -> Bool {
            guard await eventually(within: 15, { reasons.keys.allSatisfy { !self.refusals(of: $0).isEmpty } }) else { return false }
            try? await Task.sleep(nanoseconds: 2_500_000_000)
            return true
        }

        /// What the daemon logged since the tampering says each refused record in one line, with why, and
        /// nothing else of the records: every round refused exactly these and changed nothing.
        func expectRefusalsLogged(_ reasons: [String: String], sourceLocation: SourceLocation = #_sourceLocation) {
            let lines = linesSinceTampering
            let log = lines.suffix(20).joined(separator: "\n")
            for (id, reason) in reasons {
                // Without the timestamp, every refusal of this record is the same one line.
                let messages = Set(refusals(of: id).map { $0[$0.range(of: "pull skipped: ")!.lowerBound...] })
                #expect(messages.count == 1, "one message for node '\(id)': \(messages)", sourceLocation: sourceLocation)
                #expect(refusals(of: id).count == 1, "refused in one line, not one per round: \(log)", sourceLocation: sourceLocation)
                #expect(messages.allSatisfy { $0.contains(reason) }, "the refusal of node '\(id)' says \(reason): \(messages)",
                        sourceLocation: sourceLocation)
            }
            let skipped = lines.filter { $0.contains("pull skipped: ") }
            #expect(skipped.allSatisfy { line in reasons.keys.contains { line.contains("the record of node '\($0)' ") } },
                    "only the tampered records are refused: \(log)", sourceLocation: sourceLocation)
            let rounds = lines.filter { $0.contains("] pull: ") }
            #expect(!rounds.isEmpty && rounds.allSatisfy { $0.contains("pull: 0 new, 0 changed, 0 deleted, ") },
                    "the refused records changed nothing: \(log)", sourceLocation: sourceLocation)
            #expect(rounds.last?.hasSuffix(", \(reasons.count) skipped") == true, "the last round refused \(reasons.count): \(log)",
                    sourceLocation: sourceLocation)
            #expect(!lines.contains { $0.contains("pull failed") }, "a refused record does not fail the pull: \(log)",
                    sourceLocation: sourceLocation)
        }

        /// The mount serves what B had before the tampering: both nodes listed, x at its second version's
        /// size and bytes (never the first's), y as pushed; the daemon runs.
        func expectStillServing(sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(Mount.isMounted(mount.path) && MountDaemon.pid(serving: mount.path) != nil, "the daemon serves",
                    sourceLocation: sourceLocation)
            let ls = try Shell.sh("ls \(Shell.quote(mount.path + "/nodes"))", timeout: 30)
            #expect(ls.output == "x\ny\n", "ls /nodes: \(ls.output) \(ls.stderr)", sourceLocation: sourceLocation)
            #expect(try size("x") == x2.count, "x's size is its second version's", sourceLocation: sourceLocation)
            #expect(try size("y") == y.count, "y's size", sourceLocation: sourceLocation)
            expectRead("x", x2, sourceLocation: sourceLocation)
            expectRead("y", y, sourceLocation: sourceLocation)
        }

        /// `darkdisk check --remote` on B exits 1 and names each tampered record in one line, with why.
        func expectCheckRemoteRefuses(_ reasons: [String: String], sourceLocation: SourceLocation = #_sourceLocation) throws {
            let run = try remote.darkdiskB(["check", "--remote"])
            #expect(run.status == 1, "check --remote: exit \(run.status): \(run.output) \(run.stderr)", sourceLocation: sourceLocation)
            let problems = run.output.split(separator: "\n").filter { $0.hasPrefix("problem: ") }
            #expect(problems.count == reasons.count, "one line per tampered record: \(run.output)", sourceLocation: sourceLocation)
            for (id, reason) in reasons {
                #expect(problems.contains { $0.hasPrefix("problem: remote: the record of node '\(id)' ") && $0.contains(reason) },
                        "check --remote names node '\(id)' (\(reason)): \(run.output)", sourceLocation: sourceLocation)
            }
            #expect(run.output.contains("\(reasons.count) problems"), "\(run.output)", sourceLocation: sourceLocation)
        }

        /// After a tampering: the poller refuses each record in `reasons` (`what` says which), logs it once,
        /// the mount keeps serving, and `check --remote` names each.
        func expectRefusedWhileServing(_ reasons: [String: String], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            #expect(await waitForRefusals(reasons), "\(what): \(mount.log.suffix(2000))", sourceLocation: sourceLocation)
            expectRefusalsLogged(reasons, sourceLocation: sourceLocation)
            try expectStillServing(sourceLocation: sourceLocation)
            try expectCheckRemoteRefuses(reasons, sourceLocation: sourceLocation)
        }

        /// Puts the legitimate records back; then A pushes x's third version, which B's poller applies in a
        /// round that refuses nothing, B reads it, and `check --remote` passes.
        func expectRestoredBucketWorks(sourceLocation: SourceLocation = #_sourceLocation) async throws {
            for (id, record) in legit { try plant(record, as: id) }
            try remote.push("x", x3)
            #expect(await eventually(within: 15) { (try? self.size("x")) == self.x3.count },
                    "the restored bucket's next version is seen: \(mount.log.suffix(1500))", sourceLocation: sourceLocation)
            expectRead("x", x3, sourceLocation: sourceLocation)
            expectRead("y", y, sourceLocation: sourceLocation)
            let last = mount.log.split(separator: "\n").last { $0.contains("] pull: ") }
            #expect(last?.hasSuffix("pull: 0 new, 1 changed, 0 deleted, 0 skipped") == true,
                    "the round that applied it refused nothing: \(String(describing: last))", sourceLocation: sourceLocation)
            let check = try remote.darkdiskB(["check", "--remote"])
            #expect(check.status == 0 && check.output.contains("healthy") && !check.output.contains("problem: "),
                    "check --remote after the restore: \(check.output) \(check.stderr)", sourceLocation: sourceLocation)
        }
    }

    static let doesNotOpen = "does not authenticate"
    static let vanished = "without a tombstone"
    static let rollback = "is older (generation 1) than the one this store has applied (generation 2): a rollback"

    /// (a) x's and y's record objects swapped: each is sealed for the other node's name, so neither opens.
    @Test func swappedRecordsAreRefusedAndTheMountKeepsServing() async throws {
        let setup = try await Setup()
        let reasons = ["x": Self.doesNotOpen, "y": Self.doesNotOpen]
        setup.markTampering()
        try setup.plant(try #require(setup.legit["x"]), as: "y")
        try setup.plant(try #require(setup.legit["y"]), as: "x")
        try await setup.expectRefusedWhileServing(reasons, "the poller refuses both records")
        try await setup.expectRestoredBucketWorks()
    }

    /// (b) One byte of y's record flipped (in its ciphertext): the tag fails.
    @Test func anAlteredRecordIsRefusedAndTheMountKeepsServing() async throws {
        let setup = try await Setup()
        let reasons = ["y": Self.doesNotOpen]
        var altered = try #require(setup.legit["y"])
        altered[altered.startIndex + altered.count / 2] ^= 0x01
        setup.markTampering()
        try setup.plant(altered, as: "y")
        try await setup.expectRefusedWhileServing(reasons, "the poller refuses y's record")
        try await setup.expectRestoredBucketWorks()
    }

    /// (c) x's generation 1 record, which B once applied, put back over generation 2: it opens (it is
    /// genuine) but is older than what B applied, so it is refused as a rollback; applied, it would have
    /// made the mount serve x's first version (still in the bucket).
    @Test func aReplayedOlderRecordIsRefusedAndTheMountKeepsServing() async throws {
        let setup = try await Setup()
        let reasons = ["x": Self.rollback]
        setup.markTampering()
        try setup.plant(setup.olderX, as: "x")
        try await setup.expectRefusedWhileServing(reasons, "the poller refuses x's older record")
        // `pull` from the command line refuses it too, in one line, and leaves the node as it was.
        let pull = try setup.remote.darkdiskB(["pull"])
        #expect(pull.status == 1 && pull.stderrLines.count == 1 && pull.stderr.hasPrefix("darkdisk: skipped: the record of node 'x' ")
                && pull.stderr.contains(Self.rollback), "darkdisk pull: exit \(pull.status): \(pull.stderr)")
        try setup.expectStillServing()
        try await setup.expectRestoredBucketWorks()
    }

    /// (d) y's record deleted from the bucket: a delete leaves a sealed tombstone, so a record B applied that
    /// is simply gone is a bucket writer's doing (or a wiped bucket), refused like the others: y stays.
    @Test func aDeletedRecordIsRefusedAndTheMountKeepsServing() async throws {
        let setup = try await Setup()
        let reasons = ["y": Self.vanished]
        setup.markTampering()
        try FileManager.default.removeItem(atPath: setup.recordPath("y"))
        try await setup.expectRefusedWhileServing(reasons, "the poller refuses y's missing record")
        try await setup.expectRestoredBucketWorks()
    }
}
