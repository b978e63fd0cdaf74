import DarkDiskStore
import DarkDiskCloud
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// A remote that lies: answers longer than their range, a cloud file cut short or extended on the server, and
/// another node's cloud file under a node's name. Through the mount, each is an `EIO` for that node within
/// the remote timeout (never wrong bytes, never a hang), nothing damaged enters the store (`darkdisk
/// check` passes), and the other nodes keep reading.
@Suite(.processSlots) struct HostileRemoteMountTests {
    /// Store B joined to a bucket with nodes `one` and `two` (1 MiB and a bit, random), served by nginx
    /// behind the fault proxy, mounted with a 2 s remote timeout.
    final class Setup {
        let remote: RemoteBucket
        let proxy: FaultProxy
        let one = CLIStore.bytes(1_048_583, seed: 81)
        let two = CLIStore.bytes(1_048_589, seed: 82)
        let mount: Mount

        init() throws {
            remote = try RemoteBucket()
            try remote.push("one", one)
            try remote.push("two", two)
            proxy = try FaultProxy(servingRoot: remote.bucket)
            try remote.join(proxy.url)
            mount = try remote.mountB(["--remote-timeout", "2"])
        }

        func path(_ id: String) -> String { mount.path + "/nodes/\(id)/data" }

        /// `cat` of a node, bounded: exit status, the bytes it wrote and its error line.
        func cat(_ id: String) throws -> Run { try Shell.sh("exec timeout -s KILL 60 cat \(Shell.quote(path(id)))", timeout: 90) }

        /// The failed read every case here expects: non-zero exit, "Input/output error", and whatever came
        /// out before the failure is a prefix of the node's real bytes.
        func expectIOError(_ run: Run, of id: String, real: Data, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(run.status != 0 && run.status != 137, "cat of \(id): exit \(run.status) (137: killed after 60 s)", sourceLocation: sourceLocation)
            #expect(run.stderr.contains("Input/output error"), "cat of \(id): \(run.stderr)", sourceLocation: sourceLocation)
            #expect(run.stdout.count <= real.count && run.stdout == real.prefix(run.stdout.count),
                    "cat of \(id) wrote \(run.stdout.count) bytes that are not the node's", sourceLocation: sourceLocation)
        }

        /// The store and its index agree, and the untouched node reads whole.
        func expectStoreSound(sourceLocation: SourceLocation = #_sourceLocation) throws {
            let check = try remote.darkdiskB(["check", "--full"])
            #expect(check.status == 0, "darkdisk check: \(check.output) \(check.stderr)", sourceLocation: sourceLocation)
            #expect(try cat("two").stdout == two, "the other node", sourceLocation: sourceLocation)
        }
    }

    @Test func anAnswerLongerThanItsRangeIsRefusedAndAskedAgain() async throws {
        let setup = try Setup()
        try setup.proxy.control(["pad": ["bytes": 4096, "count": 2, "path": "/nodes/\(try setup.remote.objectName("one"))/"]])
        let run = try setup.cat("one")
        #expect(run.status == 0 && run.stdout == setup.one, "cat after two padded answers: exit \(run.status), \(run.stderr)")
        #expect(try setup.proxy.stats().pads == 2, "both padded answers were sent")
        try setup.expectStoreSound()
    }

    @Test func aServerThatAlwaysSendsTooMuchIsAnIOErrorAndStoresNothing() async throws {
        let setup = try Setup()
        try setup.proxy.control(["pad": ["bytes": 1, "count": 1_000_000, "path": "/nodes/\(try setup.remote.objectName("one"))/"]])
        let started = Date()
        setup.expectIOError(try setup.cat("one"), of: "one", real: setup.one)
        #expect(Date().timeIntervalSince(started) < 30, "EIO took \(Date().timeIntervalSince(started)) s")
        #expect(try Shell.xattr("user.darkdisk.local", setup.path("one")) != "full")
        try setup.expectStoreSound()
        // Once the server behaves, the node reads.
        try setup.proxy.control(["clear": true])
        await #expect(eventually(within: 30) { (try? setup.cat("one"))?.stdout == setup.one }, "after the server recovered")
    }

    @Test func aCloudFileCutShortOnTheServerIsAnIOErrorNeverWrongBytes() async throws {
        let setup = try Setup()
        let object = try setup.remote.cloudPath("one")
        let handle = try #require(FileHandle(forUpdatingAtPath: object))
        try handle.truncate(atOffset: UInt64(try setup.remote.cloudSize("one") / 2))
        try handle.close()
        setup.expectIOError(try setup.cat("one"), of: "one", real: setup.one)
        #expect(try Shell.xattr("user.darkdisk.local", setup.path("one")) != "full")
        try setup.expectStoreSound()
    }

    @Test func aCloudFileExtendedOnTheServerIsAnIOErrorAndStoresNothing() async throws {
        let setup = try Setup()
        let handle = try #require(FileHandle(forUpdatingAtPath: try setup.remote.cloudPath("one")))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(repeating: 0x5A, count: 4096))
        try handle.close()
        setup.expectIOError(try setup.cat("one"), of: "one", real: setup.one)
        #expect(try Shell.xattr("user.darkdisk.local", setup.path("one")) == "none", "nothing of the extended file is kept")
        let fetch = try setup.remote.darkdiskB(["fetch", "--node", "one"])
        #expect(fetch.status != 0 && fetch.stderrLines.count == 1 && fetch.stderr.contains("cut short or extended"),
                "darkdisk fetch: \(fetch.stderr)")
        try setup.expectStoreSound()
    }

    @Test func anotherNodesCloudFileUnderThisNodesNameIsAnIOError() async throws {
        let setup = try Setup()
        let swapped = try Data(contentsOf: URL(fileURLWithPath: try setup.remote.cloudPath("two")))
        try swapped.write(to: URL(fileURLWithPath: try setup.remote.cloudPath("one")))
        setup.expectIOError(try setup.cat("one"), of: "one", real: setup.one)
        #expect(try Shell.xattr("user.darkdisk.local", setup.path("one")) == "none", "nothing of node two's file is kept as node one's: \(setup.mount.log.suffix(3000))")
        #expect(setup.mount.log.contains("node 'one'"), "the daemon's log names the node: \(setup.mount.log.suffix(2000))")
        // The command line says why, in one line.
        let fetch = try setup.remote.darkdiskB(["fetch", "--node", "one"])
        #expect(fetch.status != 0 && fetch.stderrLines.count == 1 && fetch.stderr.contains("does not authenticate with the node's key"),
                "darkdisk fetch: \(fetch.stderr)")
        try setup.expectStoreSound()
    }

    /// A record whose sizes lie about its cloud file used to be served as a file of the
    /// record's size: `cat` printed 999 of 1 MiB bytes and exited 0. The sizes must agree with the cloud
    /// file's authenticated header before any byte is served. (Records are sealed now, so only a holder of
    /// the key, a buggy client say, can write such a record: the test seals one with store A's key.)
    @Test func aRecordWhoseSizeLiesIsAnIOError() async throws {
        let setup = try Setup()
        let a = try DiskManager(location: StoreLocation(directory: setup.remote.a.storePath), passphrase: Array("mount tests".utf8))
        let path = setup.remote.bucket + "/" + CloudLayout.record(try NodeID("one"), with: a)
        var record = try NodeRecord.open(try Data(contentsOf: URL(fileURLWithPath: path)), expected: NodeID("one"), with: a)
        record.dataSize = 999
        record.generation = (record.generation ?? 0) + 1
        try record.sealed(with: a).write(to: URL(fileURLWithPath: path))
        try RemoteBucket.check(try setup.remote.darkdiskB(["pull"]), "pull of the altered record")
        await #expect(eventually(within: 10) { (try? FileManager.default.attributesOfItem(atPath: setup.path("one"))[.size] as? Int) == 999 },
                "the mount lists the record's size")
        let cat = try setup.cat("one")
        #expect(cat.status != 0 && cat.stderr.contains("Input/output error") && cat.stdout.isEmpty,
                "cat of a node whose record lies: exit \(cat.status), \(cat.stdout.count) bytes, \(cat.stderr)")
        let lines = setup.mount.log.split(separator: "\n").filter { $0.contains("record of node 'one'") }
        #expect(!lines.isEmpty && lines.count <= 3, "the daemon's log says why: \(setup.mount.log.suffix(2000))")
        #expect(try Shell.xattr("user.darkdisk.local", setup.path("one")) == "none", "nothing of it is kept")
        let fetch = try setup.remote.darkdiskB(["fetch", "--node", "one"])
        #expect(fetch.status != 0 && fetch.stderrLines.count == 1 && fetch.stderr.contains("gives its data as 999 bytes"),
                "darkdisk fetch: \(fetch.stderr)")
        try setup.expectStoreSound()
    }
}
