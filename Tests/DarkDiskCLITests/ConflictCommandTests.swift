import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// At the command line: a push based on an old record keeps the remote's version on the
/// node, uploads the file as a conflict copy, says so in one line, exits 3, and `status` lists the copy.
@Suite(.processSlots) struct ConflictCommandTests {
    @Test func aLostRaceIsAConflictCopyThatStatusLists() async throws {
        let remote = try RemoteBucket()
        try remote.push("plan", Data("A's first plan".utf8))
        try remote.join("file://" + remote.bucket)
        try remote.push("plan", Data("A's second plan".utf8))

        // B last saw A's first plan: its push must not overwrite the second.
        let mine = try remote.b.file("mine", Data("B's plan".utf8))
        let push = try remote.darkdiskB(["push", mine, "--node", "plan", "--name", "plan.txt"])
        #expect(push.status == 3, "\(push.stderr)")
        #expect(push.stderrLines.count == 1, "\(push.stderr)")
        let line = String(push.stderrLines.first ?? "")
        #expect(line.contains("node 'plan' changed") && line.contains("plan (conflict "), "\(line)")

        let status = try remote.darkdiskB(["status", "--json"])
        let json = try #require(try JSONSerialization.jsonObject(with: status.stdout) as? [String: Any])
        let conflicts = try #require(json["conflicts"] as? [[String: Any]])
        #expect(conflicts.count == 1)
        let copyID = try #require(conflicts.first?["nodeID"] as? String)
        #expect(conflicts.first?["originalID"] as? String == "plan")
        #expect((conflicts.first?["name"] as? String)?.hasPrefix("plan (conflict ") == true)
        #expect(try remote.darkdiskB(["status"]).output.contains("'plan (conflict "))

        // Both versions are in the bucket: A reads the node as its second plan, and the copy as B's.
        #expect(try await remote.a.darkdisk(["pull", "--passphrase-file", remote.passphrase]).status == 0)
        let out = remote.a.directory + "/out"
        #expect(try await remote.a.darkdisk(["export", "--node", "plan", "--output", out, "--passphrase-file", remote.passphrase]).status == 0)
        #expect(FileManager.default.contents(atPath: out) == Data("A's second plan".utf8))
        try? FileManager.default.removeItem(atPath: out)
        #expect(try await remote.a.darkdisk(["export", "--node", copyID, "--output", out, "--passphrase-file", remote.passphrase]).status == 0)
        #expect(FileManager.default.contents(atPath: out) == Data("B's plan".utf8))
        #expect(try remote.darkdiskB(["check", "--remote"]).status == 0)
    }

    /// `delete --node ID --remote` deletes the node everywhere, unless it changed since this store saw it.
    @Test func deleteRemoteReachesTheOtherStoreConditionally() async throws {
        let remote = try RemoteBucket()
        try remote.push("old", Data("old".utf8))
        try remote.push("busy", Data("busy 1".utf8))
        try remote.join("file://" + remote.bucket)
        let before = FileManager.default.contents(atPath: try remote.recordPath("old"))
        let delete = try remote.darkdiskB(["delete", "--node", "old", "--remote"])
        #expect(delete.status == 0, "\(delete.stderr)")
        // The record is now the node's sealed tombstone: another object, naming nothing readable.
        let tombstone = FileManager.default.contents(atPath: try remote.recordPath("old"))
        #expect(tombstone != nil && tombstone != before)
        #expect(tombstone.map { $0.range(of: Data("old".utf8)) == nil } == true)
        let pull = try await remote.a.darkdisk(["pull", "--passphrase-file", remote.passphrase])
        #expect(pull.status == 0 && pull.output.contains("1 deleted"), "\(pull.output)")

        try remote.push("busy", Data("busy 2".utf8))
        expectOneLineFailure(try remote.darkdiskB(["delete", "--node", "busy", "--remote"]), mentioning: "changed")
        #expect(FileManager.default.fileExists(atPath: try remote.recordPath("busy")))
        expectOneLineFailure(try remote.darkdiskB(["delete", "--node", "busy", "--remote", "--kind", "data"]), mentioning: "--remote deletes a whole node")
    }
}
