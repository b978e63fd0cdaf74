import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// Remote-only nodes through the mount: store B has only the outline of a bucket
/// served by a real nginx behind our fault proxy (which counts the bytes it sends and can throttle or
/// fail), and ordinary tools read the nodes on demand.
@Suite(.processSlots) struct RemoteMountTests {
    @Test func remoteOnlyNodesReadOnDemand() async throws {
        let remote = try RemoteBucket()
        let big = try randomBytes(64 << 20)
        let small = try randomBytes(300_001)
        let thumbnail = try randomBytes(20_011)  // any bytes: the store does not decode images
        let metadata = Data(#"{"name":"small.jpg","width":640,"height":480}"#.utf8)
        let plain = CLIStore.bytes(1_000_003, seed: 3)
        try remote.push("big", big)
        try remote.push("small", small, thumbnail: thumbnail, metadata: metadata)
        try remote.push("plain", plain)
        let bigObject = try remote.cloudObject("big")
        let bigCloudSize = try remote.cloudSize("big")
        let proxy = try FaultProxy(servingRoot: remote.bucket)
        defer { withExtendedLifetime(proxy) {} }
        try remote.join(proxy.url)
        // Room for every node in B's data pool, so what was read stays.
        try RemoteBucket.check(try remote.darkdiskB(["config", "set", "pool.data.max_size", "256M"]), "config set")
        try proxy.control(["reset_stats": true])
        let mount = try remote.mountB()
        func at(_ path: String) -> String { mount.path + path }

        // The tree lists every node of the outline, with plaintext sizes, before any download.
        #expect(try Shell.sh("ls \(Shell.quote(at("/nodes")))", timeout: 30).output == "big\nplain\nsmall\n")
        #expect(try Shell.sh("ls \(Shell.quote(at("/nodes/small")))", timeout: 30).output == "data\nmetadata\nthumbnail\n")
        #expect(try Shell.sh("ls \(Shell.quote(at("/nodes/plain")))", timeout: 30).output == "data\n")
        #expect(try Shell.sh("ls \(Shell.quote(at("/thumbs")))", timeout: 30).output == "small\n")
        let sizes: [(String, Int)] = [("/nodes/big/data", big.count), ("/nodes/small/data", small.count),
                                      ("/nodes/small/thumbnail", thumbnail.count), ("/nodes/small/metadata", metadata.count),
                                      ("/thumbs/small", thumbnail.count), ("/nodes/plain/data", plain.count)]
        for (path, size) in sizes {
            let listed = try Shell.sh("ls -l \(Shell.quote(at(path)))", timeout: 30)
            let field = listed.output.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).first.map(String.init)
            #expect(field == String(size), "ls -l \(path): \(listed.output) \(listed.stderr)")
        }
        let listingBytes = try proxy.bytes(bigObject)
        #expect(listingBytes < 1 << 20, "listing the tree downloaded \(listingBytes) bytes of the big node")
        #expect(try Shell.xattr("user.darkdisk.local", at("/nodes/big/data")) == "none")

        // dd deep into the big node, the remote throttled to 16 MiB/s and held once half the node went out
        // (connections open): the part covering the offset comes first, so dd answers before that, whatever
        // the machine's load. (Timed against a running transfer, a starved daemon once could not tell.)
        try proxy.control(["reset_stats": true, "throttle": 16 << 20, "hold": bigCloudSize / 2])
        let block = 15_000  // 4 KiB blocks: offset 58.6 MiB of 64 MiB
        let started = Date()
        let dd = try Shell.sh("dd if=\(Shell.quote(at("/nodes/big/data"))) bs=4096 skip=\(block) count=1 status=none", timeout: 60)
        let seconds = Date().timeIntervalSince(started)
        // (Had it needed more than the half the proxy lets through, it would have failed after the timeout.)
        #expect(dd.status == 0, "dd skip=\(block) did not answer while the server held the node at half (\(String(format: "%.1f", seconds)) s): \(dd.stderr)")
        #expect(dd.stdout == big.subdata(in: block * 4096..<(block + 1) * 4096), "dd skip=\(block) returned other bytes")
        // `partial` at once: from the running download's own state, not the index's checkpoints, which
        // trail the bytes dd got (it once said `none` then).
        #expect(try Shell.xattr("user.darkdisk.local", at("/nodes/big/data"))?.hasPrefix("partial ") == true)
        try proxy.control(["hold": NSNull()])

        // The thumbnail and metadata of a remote-only node, both paths to the thumbnail.
        #expect(try Shell.sh("cat \(Shell.quote(at("/nodes/small/thumbnail")))", timeout: 60).stdout == thumbnail)
        #expect(try Shell.sh("cat \(Shell.quote(at("/thumbs/small")))", timeout: 60).stdout == thumbnail)
        #expect(try Shell.sh("cat \(Shell.quote(at("/nodes/small/metadata")))", timeout: 60).stdout == metadata)

        // Full speed again: cat of the whole big node, cp of the others.
        try proxy.control(["throttle": 0])
        #expect(try Shell.sha256(of: at("/nodes/big/data")) == sha256Hex(big), "cat of the big node")
        await #expect(eventually(within: 10) { (try? Shell.xattr("user.darkdisk.local", at("/nodes/big/data"))) == "full" },
                "local: \(String(describing: try? Shell.xattr("user.darkdisk.local", at("/nodes/big/data"))))")
        for (id, data) in [("small", small), ("plain", plain)] {
            let copy = remote.b.directory + "/\(id).copy"
            let cp = try Shell.sh("cp \(Shell.quote(at("/nodes/\(id)/data"))) \(Shell.quote(copy))", timeout: 60)
            #expect(cp.status == 0, "cp of \(id): \(cp.stderr)")
            #expect((try? Data(contentsOf: URL(fileURLWithPath: copy))) == data, "cp of \(id)")
        }
        // Random reads of a node now local.
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<8 {
            let skip = Int.random(in: 0..<big.count, using: &rng), count = Int.random(in: 1...300_000, using: &rng)
            let run = try Shell.sh("dd if=\(Shell.quote(at("/nodes/big/data"))) bs=65536 iflag=skip_bytes,count_bytes skip=\(skip) count=\(count) status=none", timeout: 60)
            #expect(run.stdout == big.subdata(in: skip..<min(big.count, skip + count)), "dd skip=\(skip) count=\(count): \(run.stderr)")
        }

        // setfattr makes the downloaded node persistent: a pool shrunk to 0 then keeps it.
        let set = try Shell.sh("setfattr -n user.darkdisk.persistent -v 1 \(Shell.quote(at("/nodes/big/data")))", timeout: 30)
        #expect(set.status == 0, "\(set.stderr)")
        #expect(try Shell.xattr("user.darkdisk.persistent", at("/nodes/big/data")) == "1")
        let pool = try remote.poolB()
        #expect(((pool["persistentSize"] as? Int) ?? 0) >= big.count, "\(pool)")
        try RemoteBucket.check(try remote.darkdiskB(["config", "set", "pool.data.max_size", "0"]), "config set")
        #expect(try Shell.xattr("user.darkdisk.local", at("/nodes/big/data")) == "full")
        try proxy.control(["reset_stats": true])
        let export = try remote.darkdiskB(["export", "--node", "big", "-o", remote.b.directory + "/big.out"])
        #expect(export.status == 0, "\(export.stderr)")
        #expect((try? Data(contentsOf: URL(fileURLWithPath: remote.b.directory + "/big.out"))) == big)
        #expect(try proxy.bytes(bigObject) == 0, "the persistent node was downloaded again")
    }

    /// `darkdisk status` lists what the mount daemon is downloading (the daemon's process,
    /// the node, bytes, rate, time left; `--json` too), and nothing once the download is done.
    /// `darkdisk fetch` (another process) downloads a node while the mount reads it: the mount serves its
    /// reads from the command's partial file as far as the command has recorded it, instead of waiting for
    /// the whole download (which failed reads of a large node after 30 s), and the node crosses the network once.
    @Test func aNodeACommandDownloadsIsReadThroughTheMountAsItArrives() async throws {
        let remote = try RemoteBucket()
        let big = try randomBytes(24 << 20)
        try remote.push("fetched", big)
        let object = try remote.cloudObject("fetched")
        let cloudSize = try remote.cloudSize("fetched")
        let proxy = try FaultProxy(servingRoot: remote.bucket)
        defer { withExtendedLifetime(proxy) {} }
        try remote.join(proxy.url)
        let mount = try remote.mountB()
        let file = mount.path + "/nodes/fetched/data"
        try proxy.control(["reset_stats": true, "throttle": 3_000_000])
        let command = [Shell.darkdisk, "fetch", "--node", "fetched", "--store", remote.b.storePath, "--passphrase-file", remote.passphrase]
            .map(Shell.quote).joined(separator: " ")
        let fetch = try Background("exec " + command, in: remote.b.directory)
        await #expect(eventually(within: 60) { (try? Shell.xattr("user.darkdisk.local", file))?.hasPrefix("partial") == true },
                      "the command records its first bytes: \(fetch.stderr)")

        let read = try await Shell.run("/usr/bin/timeout", ["-s", "KILL", "120", "dd", "if=" + file, "bs=64K", "count=16", "iflag=fullblock", "status=none"])
        let sentByThen = try proxy.bytes(object)
        #expect(read.status == 0 && read.stdout == big[0..<(1 << 20)], "exit \(read.status): \(read.stderr) LOG: \(mount.log)")
        #expect(sentByThen < cloudSize / 2, "the read was answered after \(sentByThen) of \(cloudSize) bytes: before the download ended")

        #expect(await fetch.wait(seconds: 120) == 0, "fetch: \(fetch.stderr)")
        #expect(try Shell.sha256(of: file) == sha256Hex(big))
        let sent = try proxy.bytes(object)
        #expect(sent < cloudSize + cloudSize / 10, "the node came once: \(sent) of \(cloudSize) bytes")
    }

    @Test func statusListsWhatTheDaemonDownloads() async throws {
        let remote = try RemoteBucket()
        let big = try randomBytes(24 << 20)
        try remote.push("big", big)
        let proxy = try FaultProxy(servingRoot: remote.bucket)
        defer { withExtendedLifetime(proxy) {} }
        try remote.join(proxy.url)
        try RemoteBucket.check(try remote.darkdiskB(["config", "set", "pool.data.max_size", "256M"]), "config set")
        let mount = try remote.mountB()
        let daemon = try #require(MountDaemon.pid(serving: mount.path), "no mount daemon")
        #expect(try remote.darkdiskB(["status"]).output.contains("downloading") == false, "nothing in flight yet")

        try proxy.control(["throttle": 3 << 20])  // about 8 s for the whole node
        let reader = try Background("cat \(Shell.quote(mount.path + "/nodes/big/data")) > /dev/null", in: remote.b.directory)
        var listed: [String: Any]?
        _ = await eventually(within: 20) {
            guard let run = try? remote.darkdiskB(["status", "--json"]), run.status == 0,
                  let json = try? JSONSerialization.jsonObject(with: run.stdout) as? [String: Any],
                  let transfers = json["transfers"] as? [[String: Any]] else { return false }
            listed = transfers.first { $0["kind"] as? String == "nodeData" && $0["ownerID"] as? String == "big"
                && (($0["completedBytes"] as? Int) ?? 0) > 0 }
            return listed != nil
        }
        let transfer = try #require(listed, "status --json never listed the daemon's download")
        #expect(transfer["pid"] as? Int == Int(daemon))
        #expect(((transfer["totalBytes"] as? Int) ?? 0) == (try remote.cloudSize("big")))
        #expect(((transfer["throughput"] as? Double) ?? 0) > 0)
        let text = try remote.darkdiskB(["status"])
        #expect(text.output.contains("downloading (process \(daemon)):") && text.output.contains("  data of node big: ")
                && text.output.contains("/s"), "status: \(text.output)")

        try proxy.control(["throttle": 0])
        #expect(await reader.wait(seconds: 60) == 0, "cat: \(reader.stderr)")
        #expect(await eventually(within: 10) { (try? remote.darkdiskB(["status"]).output.contains("downloading")) == false },
                "the finished download is still listed")
    }

    /// A node's metadata and thumbnail open after its data was read whole (they then come out of the
    /// downloaded cloud file, which used to answer "No such file or directory"), and a node whose data is
    /// empty lists its `data` file, of size 0, before any download.
    @Test func sectionsAfterTheDataAndAnEmptyNode() async throws {
        let remote = try RemoteBucket()
        let data = try randomBytes(200_003)
        let thumbnail = try randomBytes(5_011)
        let metadata = Data(#"{"name":"pic.png"}"#.utf8)
        try remote.push("pic", data, thumbnail: thumbnail, metadata: metadata)
        try remote.push("empty", Data())
        let proxy = try FaultProxy(servingRoot: remote.bucket)
        defer { withExtendedLifetime(proxy) {} }
        try remote.join(proxy.url)
        let mount = try remote.mountB()
        func at(_ path: String) -> String { mount.path + path }

        #expect(try Shell.sh("ls \(Shell.quote(at("/nodes/empty")))", timeout: 30).output == "data\n")
        #expect(try Shell.sh("stat -c %s \(Shell.quote(at("/nodes/empty/data")))", timeout: 30).output == "0\n")
        let empty = try Shell.sh("cat \(Shell.quote(at("/nodes/empty/data")))", timeout: 60)
        #expect(empty.status == 0 && empty.stdout.isEmpty, "cat of the empty node: \(empty.status) \(empty.stderr)")

        #expect(try Shell.sha256(of: at("/nodes/pic/data")) == sha256Hex(data))
        await #expect(eventually(within: 10) { (try? Shell.xattr("user.darkdisk.local", at("/nodes/pic/data"))) == "full" })
        let meta = try Shell.sh("cat \(Shell.quote(at("/nodes/pic/metadata")))", timeout: 60)
        #expect(meta.status == 0 && meta.stdout == metadata, "cat of the metadata after the data: \(meta.stderr)")
        let thumb = try Shell.sh("cat \(Shell.quote(at("/thumbs/pic")))", timeout: 60)
        #expect(thumb.status == 0 && thumb.stdout == thumbnail, "cat of the thumbnail after the data: \(thumb.stderr)")
    }

    enum Outage: String, CaseIterable, Sendable {
        case refused  // the server is gone: connections are refused
        case failing  // every request gets 503
        case stalled  // answers start, then no byte comes
    }

    @Test(arguments: Outage.allCases)
    func unreachableRemoteGivesIOErrorWithinTheTimeoutWhileLocalFilesRead(outage: Outage) async throws {
        let remote = try RemoteBucket()
        let far = CLIStore.bytes(2_000_000, seed: 21)
        try remote.push("far", far)
        var proxy: FaultProxy? = try FaultProxy(servingRoot: remote.bucket)
        try remote.join(try #require(proxy).url)
        let here = CLIStore.bytes(700_000, seed: 23)
        try await RemoteBucket.check(try remote.b.darkdisk(["import", "-", "--node", "here", "--persistent", "--passphrase-file", remote.passphrase],
                                                     stdin: here), "import")
        let mount = try remote.mountB(["--remote-timeout", "5"])
        let farPath = Shell.quote(mount.path + "/nodes/far/data"), herePath = Shell.quote(mount.path + "/nodes/here/data")

        switch outage {
        case .refused: proxy = nil  // stops the proxy and its nginx
        case .failing: try proxy?.control(["fail": ["status": 503, "count": 1_000_000]])
        case .stalled: try proxy?.control(["stall": ["after": 0, "seconds": 60, "count": 1_000_000]])
        }
        let started = Date()
        let reader = try Background("exec timeout -s KILL 60 cat \(farPath) > /dev/null", in: remote.b.directory)
        try? await Task.sleep(nanoseconds: UInt64((0.3) * 1e9))
        // While that read waits for the remote, the tree and a local node answer at once.
        let localStarted = Date()
        let ls = try Shell.sh("ls -l \(Shell.quote(mount.path + "/nodes"))", timeout: 30)
        let local = try Shell.sh("cat \(herePath)", timeout: 30)
        let localSeconds = Date().timeIntervalSince(localStarted)
        #expect(ls.status == 0 && ls.output.contains("far") && ls.output.contains("here"), "\(ls.output) \(ls.stderr)")
        #expect(local.stdout == here, "a local node during the outage: \(local.stderr)")
        // Less than the remote's timeout, so it did not wait for the remote (a loaded machine takes a second
        // or two to start `ls` and `cat`).
        #expect(TestTiming.isSanitized || localSeconds < 4.5, "the local read took \(localSeconds) s during the outage")

        let status = await reader.wait(seconds: 60)
        let seconds = Date().timeIntervalSince(started)
        #expect(status != nil && status != 0, "cat of a remote-only node with the remote \(outage.rawValue): exit \(String(describing: status))")
        #expect(reader.stderr.contains("Input/output error"), "\(reader.stderr)")
        // One timeout and slack, under the two a read waiting per kernel request would take.
        #expect(TestTiming.isSanitized || seconds < 5 + 4.5, "EIO came after \(String(format: "%.1f", seconds)) s with --remote-timeout 5")
        #expect(try Shell.sh("cat \(herePath)", timeout: 30).stdout == here, "local reads after the failed remote read")
        #expect(try Shell.xattr("user.darkdisk.local", mount.path + "/nodes/here/data") == "full")

        // Unreachable is not deleted: once the remote answers again, the node reads.
        guard let proxy else { return }
        try proxy.control(["clear": true])
        var last = ""
        let recovered = await eventually(within: 60) {
            last = (try? Shell.sha256(of: mount.path + "/nodes/far/data", timeout: 30)) ?? ""
            return last == sha256Hex(far)
        }
        #expect(recovered, "after the outage: \(last)")
    }
}
