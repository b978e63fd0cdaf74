import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// `darkdisk check --remote` authenticates every record and every file it names (header
/// and every chunk), lists orphans, and exits 1 with one line per problem.
@Suite(.processSlots) struct RemoteCheckTests {
    @Test func checkRemoteAuthenticatesEverythingAndNamesEachProblem() async throws {
        let remote = try RemoteBucket()
        try remote.push("one", CLIStore.bytes(300_000, seed: 61), thumbnail: CLIStore.bytes(5000, seed: 62))
        try remote.push("two", CLIStore.bytes(70_000, seed: 63))
        try RemoteBucket.check(try await remote.a.darkdisk(["push", try remote.a.file("face", CLIStore.bytes(4000, seed: 64)), "--user", "ann",
                                                      "--identity", "mail|ann", "--passphrase-file", remote.passphrase]), "push avatar")
        try remote.join("file://" + remote.bucket)
        func check() throws -> Run { try remote.darkdiskB(["check", "--remote"]) }

        var run = try check()
        #expect(run.status == 0, "\(run.output) \(run.stderr)")
        #expect(run.output.contains("remote: 3 records, 3 files") && run.output.contains("0 orphans; healthy"), "\(run.output)")

        // An object no record names is an orphan, not a problem.
        try Data("stray".utf8).write(to: URL(fileURLWithPath: remote.bucket + "/nodes/stray.ddc"))
        run = try check()
        #expect(run.status == 0 && run.output.contains("orphan: remote: nodes/stray.ddc") && run.output.contains("1 orphans"), "\(run.output)")

        // One flipped byte deep in a cloud file's data (its modification time kept, so its ETag stays):
        // only reading every chunk finds it.
        let one = try remote.cloudPath("one")
        let oneKey = String(try remote.cloudObject("one").dropFirst())
        let twoKey = String(try remote.cloudObject("two").dropFirst())
        let flip = try Shell.sh("python3 -c 'import os,sys; p=sys.argv[1]; st=os.stat(p); f=open(p,\"r+b\"); f.seek(200000); b=f.read(1); f.seek(200000); f.write(bytes([b[0]^1])); f.close(); os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))' \(Shell.quote(one))", timeout: 30)
        #expect(flip.status == 0, "could not alter the cloud file: \(flip.stderr)")
        // A record moved under another node's name, and a cloud file gone.
        try FileManager.default.copyItem(atPath: try remote.recordPath("two"), toPath: try remote.recordPath("impostor"))
        try FileManager.default.removeItem(atPath: remote.bucket + "/" + twoKey)
        run = try check()
        #expect(run.status == 1, "\(run.output) \(run.stderr)")
        let problems = run.output.split(separator: "\n").filter { $0.hasPrefix("problem: remote: ") }
        // (B does not know the impostor's node: the line names its object; the bucket knows no node ID.)
        let impostor = try remote.objectName("impostor")
        #expect(problems.count == 3, "\(run.output)")
        #expect(problems.contains { $0.contains("\(oneKey) does not authenticate") && $0.contains("chunk") }, "\(problems)")
        #expect(problems.contains { $0.contains("the record records/\(impostor).rec does not authenticate") }, "\(problems)")
        #expect(problems.contains { $0.contains("\(twoKey) is named by a record but is not in") }, "\(problems)")
        #expect(run.output.contains("3 problems"))

        // JSON, for scripts.
        let json = try remote.darkdiskB(["check", "--remote", "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
        let remoteReport = try #require(report["remote"] as? [String: Any])
        #expect((remoteReport["problems"] as? [String])?.count == 3 && (remoteReport["orphans"] as? [String]) == ["nodes/stray.ddc"])
    }

    /// A faithful copy of a `file://` bucket (`cp -r`: new inodes and times, so new ETags) is healthy: the
    /// check compares what the records bind (each cloud file's ID), not ETags (before: one "ETag changed"
    /// problem per file while every read was right). A check that finds problems leaves no scratch file
    /// behind for the next `check` to count as an interrupted import's.
    @Test func aFaithfulCopyOfTheBucketIsHealthyAndAFailedCheckLeavesNothing() async throws {
        let remote = try RemoteBucket()
        try remote.push("one", CLIStore.bytes(30_000, seed: 65))
        try remote.push("two", CLIStore.bytes(20_000, seed: 66))
        try remote.join("file://" + remote.bucket)
        let copied = try Shell.sh("cp -r \(Shell.quote(remote.bucket)) \(Shell.quote(remote.bucket + ".copy")) && mv \(Shell.quote(remote.bucket)) \(Shell.quote(remote.bucket + ".old")) && mv \(Shell.quote(remote.bucket + ".copy")) \(Shell.quote(remote.bucket))", timeout: 30)
        try #require(copied.status == 0, "\(copied.stderr)")
        var run = try remote.darkdiskB(["check", "--remote"])
        #expect(run.status == 0 && run.output.contains("2 files") && run.output.contains("healthy"), "\(run.output)")

        try FileManager.default.removeItem(atPath: try remote.cloudPath("two"))
        run = try remote.darkdiskB(["check", "--remote"])
        #expect(run.status == 1, "\(run.output)")
        let left = try Shell.sh("find \(Shell.quote(remote.b.storePath)) -name '*.scratch'", timeout: 30)
        #expect(left.output.isEmpty, "scratch files left: \(left.output)")
        run = try remote.darkdiskB(["check"])
        #expect(run.output.contains("0 staging files left by interrupted imports"), "\(run.output)")
    }

    /// `darkdisk gc` deletes the versions no record names (after --grace), and then
    /// `check --remote` finds no orphan.
    @Test func gcDeletesUnnamedVersions() async throws {
        let remote = try RemoteBucket()
        try remote.push("doc", CLIStore.bytes(50_000, seed: 65))
        try remote.push("doc", CLIStore.bytes(40_000, seed: 66))
        let versions = try FileManager.default.contentsOfDirectory(atPath: try remote.cloudFolder("doc"))
        #expect(versions.count == 2, "each push writes a new version: \(versions)")
        func a(_ arguments: [String]) throws -> Run { try remote.a.darkdisk(arguments + ["--passphrase-file", remote.passphrase]) }
        var run = try a(["gc"])
        #expect(run.status == 0 && run.output.contains("deleted 0 unnamed cloud file versions") && run.output.contains("1 waiting"), "\(run.output) \(run.stderr)")
        run = try a(["gc", "--grace", "0"])
        #expect(run.status == 0 && run.output.contains("deleted 1 unnamed cloud file versions"), "\(run.output) \(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: try remote.cloudFolder("doc")).count == 1)
        run = try a(["check", "--remote"])
        #expect(run.status == 0 && run.output.contains("0 orphans; healthy"), "\(run.output)")
        #expect(try a(["export", "--node", "doc"]).stdout == CLIStore.bytes(40_000, seed: 66))
        let bad = try a(["gc", "--grace", "-1"])
        #expect(bad.status != 0 && bad.stderrLines.count >= 1)
    }
}
