import DarkDiskTestSupport
import DarkDiskStore
import DarkDiskTestTraits
import Foundation
import Testing

/// The mount follows the remote's outline: nodes only in the remote are listed and read on demand, and a
/// `pull` in another process that changes or removes a node is seen through the mount (the kernel's cache
/// of it is invalidated), even by a handle that was already open.
@Suite(.processSlots) struct OutlineMountTests {
    @Test func aPullThatChangesOrRemovesANodeIsSeenThroughTheMount() async throws {
        let a = try CLIStore()
        let b = try CLIStore()
        let bucket = a.directory + "/bucket"
        try FileManager.default.createDirectory(atPath: bucket, withIntermediateDirectories: true)
        let passphrase = try a.file("pass", Data("outline tests\n".utf8))
        let first = CLIStore.bytes(3_000_000, seed: 71)
        let second = CLIStore.bytes(1_234_567, seed: 72)
        await #expect(try a.darkdisk(["init", "--remote", "file://" + bucket, "--passphrase-file", passphrase, "--scrypt-log-n", "10"]).status == 0)
        await #expect(try a.darkdisk(["push", try a.file("v1", first), "--node", "doc", "--passphrase-file", passphrase]).status == 0)
        await #expect(try a.darkdisk(["push", try a.file("o", Data("other".utf8)), "--node", "other", "--passphrase-file", passphrase]).status == 0)
        await #expect(try b.darkdisk(["init", "--remote", "file://" + bucket, "--passphrase-file", passphrase, "--scrypt-log-n", "10"]).status == 0)
        await #expect(try b.darkdisk(["pull", "--passphrase-file", passphrase]).status == 0)

        let mount = try Mount(b, options: ["--passphrase-file", passphrase])
        let data = mount.path + "/nodes/doc/data"
        await #expect(try Shell.sh("ls \(Shell.quote(mount.path + "/nodes"))").output == "doc\nother\n", "listed before any download")
        await #expect(try Shell.sh("stat -c %s \(Shell.quote(data))").output == "3000000\n", "sized from the outline")
        await #expect(try Shell.sh("cat \(Shell.quote(data))").stdout == first, "read on demand")

        // Another machine pushes a new version; this one pulls while the mount runs.
        await #expect(try a.darkdisk(["push", try a.file("v2", second), "--node", "doc", "--passphrase-file", passphrase]).status == 0)
        await #expect(try a.darkdisk(["delete", "--node", "other", "--remote", "--passphrase-file", passphrase]).status == 0)
        await #expect(try b.darkdisk(["pull", "--passphrase-file", passphrase]).output.contains("1 changed, 1 deleted"))
        await #expect(eventually(within: 10) { (try? Shell.sh("stat -c %s \(Shell.quote(data))").output) == "1234567\n" }, "the new size is seen")
        await #expect(try Shell.sh("cat \(Shell.quote(data))").stdout == second, "the new bytes, not the kernel's cached old ones")
        await #expect(eventually(within: 10) { (try? Shell.sh("ls \(Shell.quote(mount.path + "/nodes"))").output) == "doc\n" }, "the removed node is gone")
        // A pull writes the changed records, then deletes the nodes that went: the watcher may see the two
        // steps in one check or in two, so the nodes its log lines name are gathered.
        await #expect(eventually(within: 10) { Self.changedNodes(in: mount.log).isSuperset(of: ["doc", "other"]) }, "the kernel was told: \(Self.changedNodes(in: mount.log))")
    }

    /// The nodes the daemon's store watcher named in its log lines ("the store changed: 2 nodes (a, b) …").
    static func changedNodes(in log: String) -> Set<String> {
        var nodes = Set<String>()
        for line in log.split(separator: "\n") {
            guard let range = line.range(of: "the store changed: "), let open = line[range.upperBound...].firstIndex(of: "("),
                  let close = line[open...].firstIndex(of: ")") else { continue }
            for id in line[line.index(after: open)..<close].split(separator: ",") { nodes.insert(id.trimmingCharacters(in: .whitespaces)) }
        }
        return nodes
    }

    /// `delete --node` deletes local copies only; a node the remote has stays on the mount,
    /// remote-only again, and reads by downloading anew (it vanished until the next pull).
    @Test func deletingLocalFilesLeavesTheNodeListed() async throws {
        let setup = try RemoteBucket()
        let content = CLIStore.bytes(700_000, seed: 76)
        try setup.push("kept", content)
        try setup.join("file://" + setup.bucket)
        try RemoteBucket.check(try setup.darkdiskB(["fetch", "--node", "kept"]), "fetch")
        let mount = try Mount(setup.b, options: ["--passphrase-file", setup.passphrase])
        let data = mount.path + "/nodes/kept/data"
        #expect(try Shell.xattr("user.darkdisk.local", data) == "full")
        try RemoteBucket.check(try setup.darkdiskB(["delete", "--node", "kept"]), "delete")
        await #expect(eventually(within: 10) { (try? Shell.xattr("user.darkdisk.local", data)) == "none" }, "the local copy is gone")
        await #expect(try Shell.sh("ls \(Shell.quote(mount.path + "/nodes"))").output == "kept\n", "still listed")
        await #expect(try Shell.sh("cat \(Shell.quote(data))").stdout == content, "read by downloading again")
    }

    @Test func avatarsListedByUserRecordsAreReadOnDemand() async throws {
        let a = try CLIStore()
        let b = try CLIStore()
        let bucket = a.directory + "/bucket"
        try FileManager.default.createDirectory(atPath: bucket, withIntermediateDirectories: true)
        let passphrase = try a.file("pass", Data("avatars tests\n".utf8))
        let picture = CLIStore.bytes(30_000, seed: 74)
        let replacement = CLIStore.bytes(4_321, seed: 75)
        let identity = "auth0|5f1c@example.com"
        await #expect(try a.darkdisk(["init", "--remote", "file://" + bucket, "--passphrase-file", passphrase, "--scrypt-log-n", "10"]).status == 0)
        await #expect(try a.darkdisk(["push", try a.file("p", picture), "--user", "alice", "--identity", identity, "--passphrase-file", passphrase]).status == 0)
        await #expect(try b.darkdisk(["init", "--remote", "file://" + bucket, "--passphrase-file", passphrase, "--scrypt-log-n", "10"]).status == 0)
        await #expect(try b.darkdisk(["pull", "--passphrase-file", passphrase]).status == 0)

        let mount = try Mount(b, options: ["--passphrase-file", passphrase])
        let file = mount.path + "/avatars/alice/" + identity
        await #expect(try Shell.sh("ls \(Shell.quote(mount.path + "/avatars"))").output == "alice\n", "listed before any download")
        await #expect(try Shell.sh("ls \(Shell.quote(mount.path + "/avatars/alice"))").output == identity + "\n")
        await #expect(try Shell.sh("stat -c %s \(Shell.quote(file))").output == "30000\n", "sized from the user record")
        await #expect(try Shell.sh("getfattr --only-values -n user.darkdisk.local \(Shell.quote(file))").output == "none")
        await #expect(try Shell.sh("cat \(Shell.quote(file))").stdout == picture, "downloaded on open")
        await #expect(try Shell.sh("getfattr --only-values -n user.darkdisk.local \(Shell.quote(file))").output == "full")

        // Replaced on another machine and pulled here while mounted: the new size and bytes are seen.
        await #expect(try a.darkdisk(["push", try a.file("r", replacement), "--user", "alice", "--identity", identity, "--passphrase-file", passphrase]).status == 0)
        await #expect(try b.darkdisk(["pull", "--passphrase-file", passphrase]).status == 0)
        await #expect(eventually(within: 10) { (try? Shell.sh("stat -c %s \(Shell.quote(file))").output) == "4321\n" }, "the new size is seen")
        await #expect(try Shell.sh("cat \(Shell.quote(file))").stdout == replacement, "the new avatar, not the stale copy")
        await #expect(try Shell.sh("ls \(Shell.quote(mount.path + "/avatars/alice/nobody"))").status != 0)
    }

    @Test func aDamagedCacheCopyIsAnErrorOnceThenDownloadedAgain() async throws {
        let a = try CLIStore()
        let b = try CLIStore()
        let bucket = a.directory + "/bucket"
        try FileManager.default.createDirectory(atPath: bucket, withIntermediateDirectories: true)
        let passphrase = try a.file("pass", Data("damage tests\n".utf8))
        let data = CLIStore.bytes(500_000, seed: 73)
        await #expect(try a.darkdisk(["init", "--remote", "file://" + bucket, "--passphrase-file", passphrase, "--scrypt-log-n", "10"]).status == 0)
        await #expect(try a.darkdisk(["push", try a.file("d", data), "--node", "n", "--passphrase-file", passphrase]).status == 0)
        await #expect(try b.darkdisk(["init", "--remote", "file://" + bucket, "--passphrase-file", passphrase, "--scrypt-log-n", "10"]).status == 0)
        await #expect(try b.darkdisk(["pull", "--passphrase-file", passphrase]).status == 0)
        let mount = try Mount(b, options: ["--passphrase-file", passphrase])
        let path = mount.path + "/nodes/n/data"
        await #expect(try Shell.sh("cat \(Shell.quote(path))").stdout == data)

        // Bit rot in the cached copy: flip one byte in the middle of the stored file (`cat` may end before
        // the download has moved into the pool).
        var cached: [String] = []
        await #expect(eventually(within: 10) {
            cached = (try? Shell.sh("find \(Shell.quote(b.storePath + "/cache/files")) -type f -name '*.ddf'").output
                .split(separator: "\n").map(String.init)) ?? []
            return cached.count == 1
        }, "the download lands in the cache pool")
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: try #require(cached.first)))
        try handle.seek(toOffset: 250_000)
        let byte = try #require(try handle.read(upToCount: 1)).first!
        try handle.seek(toOffset: 250_000)
        try handle.write(contentsOf: [byte ^ 0x40])
        try handle.close()
        _ = try await Shell.sh("echo 3 > /proc/sys/vm/drop_caches")

        let damaged = try await Shell.sh("cat \(Shell.quote(path)) > /dev/null")
        #expect(damaged.status != 0 && damaged.stderr.contains("Input/output error"), "\(damaged.stderr)")
        #expect(mount.log.contains("dropped the damaged cache copy"))
        await #expect(try Shell.sh("cat \(Shell.quote(path))").stdout == data, "downloaded again, never wrong bytes")
    }

    /// The mount daemon pulls on a timer (--poll-interval), so a node another machine
    /// pushes appears, and a new version of a node is seen, without a `pull`.
    @Test func theDaemonPullsOnATimer() async throws {
        let remote = try RemoteBucket()
        try remote.push("first", CLIStore.bytes(1000, seed: 1))
        try remote.join("file://" + remote.bucket)
        let mount = try remote.mountB(["--poll-interval", "1"])
        let nodes = mount.path + "/nodes"
        #expect(try Shell.sh("ls \(Shell.quote(nodes))", timeout: 30).output == "first\n")

        try remote.push("second", CLIStore.bytes(2000, seed: 2))
        try remote.push("first", CLIStore.bytes(3000, seed: 3))
        #expect(await eventually(within: 20) { (try? Shell.sh("ls \(Shell.quote(nodes))", timeout: 30).output) == "first\nsecond\n" },
                "the pushed node appears without a pull")
        #expect(await eventually(within: 20) { (try? Shell.sh("stat -c %s \(Shell.quote(nodes + "/first/data"))", timeout: 30).output) == "3000\n" },
                "the new version's size is seen")
        #expect(try Shell.sh("cat \(Shell.quote(nodes + "/second/data"))", timeout: 30).stdout == CLIStore.bytes(2000, seed: 2))
        // One line per round that changed something (the two pushes may land in one round or two).
        let pulls = mount.log.split(separator: "\n").filter { $0.contains("] pull: ") }
        #expect(!pulls.isEmpty && pulls.count <= 2, "the daemon says what its pulls changed: \(mount.log.suffix(1500))")

        let bad = try remote.darkdiskB(["mount", remote.b.directory + "/other", "--poll-interval", "0.1"])
        #expect(bad.status != 0 && bad.stderr.contains("--poll-interval"), "\(bad.stderr)")
    }
}
