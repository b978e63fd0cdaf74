import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Whoever holds the bucket edits its objects as an attacker would, with the tools an attacker has (`cp`,
/// `touch`), and no key. Nothing they do may change what a user reads: each edit is refused in one line
/// and a non-zero exit, on the machine that wrote the node and on one that joined.
@Suite(.processSlots) struct HostileBucketTests {
    /// An older version of a node's content, copied over the object the current record names (same size:
    /// a same-size edit), with the object's time put back so that a `file://` ETag (inode, size, time) stays
    /// the same: every version is sealed under the node's one key, so only the record's file ID tells them
    /// apart. Before, the old bytes were read back with exit 0 and `check --remote` said healthy.
    @Test func anOlderVersionPutInTheCurrentOnesPlaceIsRefused() async throws {
        let remote = try RemoteBucket()
        let (first, second) = (CLIStore.bytes(100_003, seed: 71), CLIStore.bytes(100_003, seed: 72))
        try remote.push("x", first)
        let older = try Data(contentsOf: URL(fileURLWithPath: try remote.cloudPath("x")))
        try remote.join("file://" + remote.bucket)
        try remote.push("x", second)
        #expect(try remote.darkdiskB(["pull"]).status == 0)
        let current = try remote.cloudPath("x")
        #expect(try Data(contentsOf: URL(fileURLWithPath: current)).count == older.count, "the same size")

        // The attack: the old bytes written into the current object (same inode), its time put back.
        try #require(try overwriteKeepingTimes(current, with: older), "the ETag the remote reports is unchanged")

        // The joined machine (never downloaded x) and the writer (its copy evicted) both refuse it.
        let joined = try remote.darkdiskB(["export", "--node", "x"])
        #expect(joined.status != 0 && joined.stdout.isEmpty, "B read \(joined.stdout.count) bytes: \(joined.stderr)")
        #expect(joined.stderr.contains("not the version its record names"), "\(joined.stderr)")
        #expect(try await remote.a.darkdisk(["evict", "--node", "x", "--passphrase-file", remote.passphrase]).status == 0)
        let writer = try await remote.a.darkdisk(["export", "--node", "x", "--passphrase-file", remote.passphrase])
        #expect(writer.status != 0 && writer.stdout.isEmpty, "A read \(writer.stdout.count) bytes: \(writer.stderr)")
        let check = try remote.darkdiskB(["check", "--remote"])
        #expect(check.status != 0 && check.output.contains("not the version its record names"), "\(check.output)")

        // A new version written over it is read again.
        try FileManager.default.removeItem(atPath: current)
        try remote.push("x", second)
        #expect(try remote.darkdiskB(["pull"]).status == 0)
        #expect(try remote.darkdiskB(["export", "--node", "x"]).stdout == second)
    }

    /// Entries written into the bucket by hand (plain JSON records, as darkdisk wrote before sealing them):
    /// a folder, a set-uid file with an attribute, and a link to /etc/shadow inside a real folder. Before,
    /// `pull` took all three (exit 0, "3 new"); each is refused in one line now, and nothing appears.
    @Test func entriesInjectedIntoTheBucketNeverAppear() async throws {
        let remote = try RemoteBucket()
        try remote.push("real", CLIStore.bytes(1000, seed: 73))
        try remote.join("file://" + remote.bucket)
        let wrapped = String(repeating: "ab", count: 60)
        let forged = [
            ("forged-folder", #""type":"folder","name":"inbox""#),
            ("forged-suid", #""type":"file","name":"run-me","mode":3583,"parentID":"real","xattrs":{"user.x":"MQ=="}"#),
            ("forged-link", #""type":"symlink","name":"open-me","target":"/etc/shadow","parentID":"real""#),
        ]
        for (id, fields) in forged {
            let json = #"{"version":1,"nodeID":"\#(id)","metadataSize":0,"thumbnailSize":0,"dataSize":0,"wrappedKey":"\#(wrapped)","cloudETag":""x"",\#(fields)}"#
            try Data(json.utf8).write(to: URL(fileURLWithPath: remote.bucket + "/records/\(id).json"))
        }
        let pull = try remote.darkdiskB(["pull"])
        #expect(pull.status == 1, "\(pull.output)")
        #expect(pull.stderrLines.count == 3 && pull.stderrLines.allSatisfy { $0.contains("is unsealed (plain JSON") }, "\(pull.stderr)")
        #expect(pull.output.contains("0 new") && pull.output.contains("3 skipped"), "\(pull.output)")
        for (id, _) in forged {
            #expect(try remote.darkdiskB(["export", "--node", id]).status != 0, "\(id) is not a node")
        }
    }

    /// The bucket learns no user or identity: user records are sealed under keyed names and avatars are
    /// named by a keyed hash (before: `users/alice.json` in the clear, `avatars/alice/<hex of the identity>`).
    /// A plain user record put in the bucket is refused in one line.
    @Test func theBucketLearnsNoUserAndTakesNoPlainUserRecord() async throws {
        let remote = try RemoteBucket()
        let picture = try ImageCommandTests().picture(remote.a, "face.png", 32, 32)
        let push = try await remote.a.darkdisk(["push", picture, "--user", "alice", "--identity", "alice@example.com",
                                                "--passphrase-file", remote.passphrase])
        #expect(push.status == 0, "\(push.stderr)")
        let grep = try await Shell.sh("grep -rlaE 'alice|example' \(Shell.quote(remote.bucket)); find \(Shell.quote(remote.bucket)) | grep -E 'alice|example|616c696365'")
        #expect(grep.output.isEmpty, "the bucket names the user: \(grep.output)")
        try remote.join("file://" + remote.bucket)
        let listed = try remote.darkdiskB(["avatar", "--user", "alice", "--identity", "alice@example.com"])
        let original = try Data(contentsOf: URL(fileURLWithPath: picture))
        #expect(listed.status == 0 && listed.stdout == original, "\(listed.stderr)")

        try Data(#"{"version":1,"userID":"mallory","identities":[]}"#.utf8).write(to: URL(fileURLWithPath: remote.bucket + "/users/mallory.json"))
        let pull = try remote.darkdiskB(["pull"])
        #expect(pull.status == 1 && pull.stderrLines.count == 1 && pull.stderr.contains("users/mallory.json is unsealed"), "\(pull.stderr)")
    }

    /// A machine's first pull has no generation of its own to refuse a rollback with: what the bucket serves
    /// then is trusted (a machine joining without evidence takes the rolled-back record: the control). With
    /// the fingerprint of a trusted machine (`darkdisk fingerprint`), `init --remote --expect-fingerprint`
    /// makes that first pull apply nothing until the bucket serves the same records; after it, the usual
    /// rollback check holds.
    @Test func aFirstPullChecksTheFingerprintOfATrustedMachine() async throws {
        let remote = try RemoteBucket()
        let (first, second) = (CLIStore.bytes(3000, seed: 81), CLIStore.bytes(3000, seed: 82))
        try remote.push("doc", first)
        let record = try remote.recordPath("doc")
        let oldRecord = try Data(contentsOf: URL(fileURLWithPath: record))
        try remote.push("doc", second)
        try remote.push("other", CLIStore.bytes(500, seed: 83))
        let printed = try await remote.a.darkdisk(["fingerprint", "--passphrase-file", remote.passphrase])
        #expect(printed.status == 0, "\(printed.stderr)")
        let fingerprint = try #require(printed.output.split(separator: " ").first.map(String.init))
        #expect(fingerprint.hasPrefix("dd1-") && fingerprint.count == 36 && printed.output.contains("(2 nodes)"), "\(printed.output)")
        let newRecord = try Data(contentsOf: URL(fileURLWithPath: record))

        // The bucket serves the older record of doc (a sealed record it once held).
        try oldRecord.write(to: URL(fileURLWithPath: record))
        let trusting = try CLIStore()
        await #expect(try trusting.darkdisk(["init", "--remote", "file://" + remote.bucket, "--passphrase-file", remote.passphrase]).status == 0)
        await #expect(try trusting.darkdisk(["pull", "--passphrase-file", remote.passphrase]).status == 0)
        await #expect(try trusting.darkdisk(["export", "--node", "doc", "--passphrase-file", remote.passphrase]).stdout == first,
                "without evidence, a first pull takes what the bucket serves")

        let joined = try await remote.b.darkdisk(["init", "--remote", "file://" + remote.bucket, "--passphrase-file", remote.passphrase,
                                                   "--scrypt-log-n", "10", "--expect-fingerprint", fingerprint.uppercased()])
        #expect(joined.status == 0, "\(joined.stderr)")
        let refused = try remote.darkdiskB(["pull"])
        expectOneLineFailure(refused, mentioning: "not the expected \(fingerprint)")
        #expect(refused.stderr.contains("nothing was pulled"), "\(refused.stderr)")
        #expect(try remote.darkdiskB(["export", "--node", "other"]).status != 0, "nothing of the served outline was applied")

        // The bucket serves the current records again: the pull applies them, and forgets the fingerprint.
        try newRecord.write(to: URL(fileURLWithPath: record))
        let pulled = try remote.darkdiskB(["pull"])
        #expect(pulled.status == 0 && pulled.output.contains("2 new"), "\(pulled.output) \(pulled.stderr)")
        #expect(try remote.darkdiskB(["export", "--node", "doc"]).stdout == second)
        #expect(try remote.darkdiskB(["fingerprint"]).output.hasPrefix(fingerprint + " "), "B now prints A's fingerprint")
        try oldRecord.write(to: URL(fileURLWithPath: record))
        let rolledBack = try remote.darkdiskB(["pull"])
        #expect(rolledBack.status != 0 && rolledBack.stderr.contains("rollback"), "\(rolledBack.stderr)")
        #expect(try remote.darkdiskB(["export", "--node", "doc"]).stdout == second)

        // Malformed evidence, or evidence without a remote to check, is one line.
        expectOneLineFailure(try remote.darkdiskB(["pull", "--expect-fingerprint", "dd1-xyz"]), mentioning: "32 hex digits")
        let lone = try CLIStore()
        await expectOneLineFailure(try lone.darkdisk(["init", "--expect-fingerprint", fingerprint]), mentioning: "needs --remote")
        #expect(!FileManager.default.fileExists(atPath: lone.storePath))
    }

    /// The bucket's owner sees padded sizes: each cloud file is followed by random bytes up to at least 1 KiB
    /// and above that Padmé's sizes (at most 12 % more), so files of nearby sizes are one size; the padding
    /// never reaches a reader, an object cut to its exact length (as written before padding) still reads, and
    /// one byte more or less than either is refused.
    @Test func cloudFilesArePaddedAndThePaddingIsNeverRead() async throws {
        let remote = try RemoteBucket()
        let contents = [("one", CLIStore.bytes(1, seed: 91)), ("six", CLIStore.bytes(600, seed: 92)),
                        ("big", CLIStore.bytes(100_000, seed: 93)), ("bigger", CLIStore.bytes(100_700, seed: 94))]
        for (id, data) in contents { try remote.push(id, data) }
        var sizes: [String: Int] = [:]
        for (id, _) in contents {
            let object = try Data(contentsOf: URL(fileURLWithPath: try remote.cloudPath(id)))
            let length = CloudFileLength.of(header: Array(object.prefix(80)))
            sizes[id] = object.count
            #expect(object.count == Self.padme(length), "\(id): \(object.count) bytes for a \(length)-byte cloud file")
            #expect(Double(object.count) <= max(1024, Double(length) * 1.12))
            #expect(object.suffix(object.count - length).contains { $0 != 0 } || object.count == length, "random padding")
        }
        #expect(sizes["one"] == 1024 && sizes["six"] == 1024 && sizes["big"] == sizes["bigger"], "\(sizes)")
        try remote.join("file://" + remote.bucket)
        for (id, data) in contents {
            let read = try remote.darkdiskB(["export", "--node", id])
            #expect(read.stdout == data, "\(id): \(read.stderr)")
        }
        let check = try remote.darkdiskB(["check", "--remote"])
        #expect(check.status == 0, "\(check.output) \(check.stderr)")

        // Cut to its exact length (unpadded, as before): read. One byte off either length: refused.
        let path = try remote.cloudPath("big")
        let object = try Data(contentsOf: URL(fileURLWithPath: path))
        let exact = CloudFileLength.of(header: Array(object.prefix(80)))
        try object.prefix(exact).write(to: URL(fileURLWithPath: path))
        #expect(try remote.darkdiskB(["evict", "--node", "big"]).status == 0)
        #expect(try remote.darkdiskB(["export", "--node", "big"]).stdout == contents[2].1, "an unpadded cloud file still reads")
        #expect(try remote.darkdiskB(["check", "--remote"]).status == 0)
        for wrong in [object.prefix(exact + 1), object + Data([0])] {
            try wrong.write(to: URL(fileURLWithPath: path))
            #expect(try remote.darkdiskB(["evict", "--node", "big"]).status == 0)
            let read = try remote.darkdiskB(["export", "--node", "big"])
            #expect(read.status != 0 && read.stdout.isEmpty && read.stderr.contains("extended"), "\(wrong.count) bytes: \(read.stderr)")
        }
    }

    /// Padmé with a 1 KiB floor, written here from its paper: keep the top ⌊log₂ E⌋ + 1 of E bits.
    static func padme(_ length: Int) -> Int {
        guard length > 1024 else { return 1024 }
        let e = Int(log2(Double(length)).rounded(.down))
        let s = Int(log2(Double(e)).rounded(.down)) + 1
        let mask = (1 << (e - s)) - 1
        return (length + mask) & ~mask
    }
}
