import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import DarkDiskSync
import Testing

/// The http remote and the DownloadManager against a real nginx, through our fault-injecting proxy
/// (`Tests/Tools/fault-proxy.py`): connections cut mid-body, 503 bursts, an outage, the cloud file replaced
/// between parts, a server that ignores ranges, a slow and a stalling server, and 20 concurrent readers.
/// Every download must end with the right bytes or a clear typed error, never wrong bytes.
@Suite(.ownThreads) struct FaultInjectionTests {
    /// Store A pushed the nodes to a file bucket; nginx serves the bucket; the proxy is in front of nginx;
    /// store B pulled the outline through the proxy. The proxy's counters start at zero.
    final class Rig {
        let setup: CloudTests.Setup
        let nginx: Nginx
        let proxy: FaultProxy
        let remote: HTTPRemote

        init(_ nodes: [String: Data], remote makeRemote: (String) -> HTTPRemote = { HTTPRemote(url: $0) }) async throws {
            setup = try CloudTests.Setup()
            for (id, data) in nodes.sorted(by: { $0.key < $1.key }) {
                try await CloudSync(manager: setup.a, remote: setup.remote).push(dataFile: setup.file(id, data), nodeID: NodeID(id))
            }
            nginx = try Nginx(root: setup.remote.root)
            proxy = try FaultProxy(upstream: nginx.url)
            remote = makeRemote(proxy.url)
            let pulled = try await CloudSync(manager: setup.b, remote: remote).pull()
            #expect(pulled.added == nodes.count)
            try proxy.control(["reset_stats": true])
        }

        func downloads(partSize: UInt64 = 256 << 10, parallelParts: Int = 1) -> DownloadManager {
            DownloadManager(manager: setup.b, remote: remote, partSize: partSize, parallelParts: parallelParts)
        }

        /// The cloud file as nginx serves it (the proxy's path is `/` + this).
        func cloudFile(_ id: String) throws -> String { try setup.cloudKey(NodeID(id)) }

        /// The node's cloud file length, without its padding: what a download moves.
        func cloudFileSize(_ id: String) throws -> Int {
            try CloudFileLength.ofObject(at: setup.remote.root + "/" + cloudFile(id))
        }

        /// Body bytes the proxy sent for the node's cloud file since the counters were reset.
        func sent(_ id: String) throws -> Int { try proxy.bytes("/" + cloudFile(id)) }

        func plaintext(_ export: DiskExport) throws -> Data { try CloudTests().plaintext(export) }

        /// A second version of a node's cloud file (same node key, other content), written next to the bucket.
        /// A copy of a node's cloud file as it is, written next to the bucket: copied over the original, it is
        /// the same version under a new ETag (a bucket restored or synced again).
        func copy(of id: String, name: String) throws -> String {
            let path = setup.directory + "/" + name + ".ddc"
            try FileManager.default.copyItem(atPath: setup.remote.root + "/" + cloudFile(id), toPath: path)
            return path
        }

        func replacement(for id: String, data: Data, name: String) throws -> String {
            let key = try setup.a.outline.contentKey(for: NodeID(id)).key
            let path = setup.directory + "/" + name + ".ddc"
            _ = try FileConversion.encryptCloudFile(metadata: nil, thumbnail: nil, dataFileAt: setup.file(name, data), key: key, to: path)
            return path
        }
    }

    /// Runs a download that must fail and returns its error (recording an issue when it succeeds).
    func failure(_ body: () async throws -> DiskExport, sourceLocation: SourceLocation = #_sourceLocation) async -> RemoteError? {
        do {
            _ = try await body()
            Issue.record("the download succeeded", sourceLocation: sourceLocation)
            return nil
        } catch let error as RemoteError {
            return error
        } catch {
            Issue.record("not a RemoteError: \(type(of: error)) \(error)", sourceLocation: sourceLocation)
            return nil
        }
    }

    // MARK: Connections cut mid-body

    @Test func connectionsCutMidBodyAreRetriedAndGiveTheRightBytes() async throws {
        let one = CloudTests.bytes(1_500_000, seed: 101)
        let three = CloudTests.bytes(1_500_000, seed: 102)
        let rig = try await Rig(["one": one, "three": three])

        // One part at a time: the first part is cut twice (after 100,000 bytes), the third attempt gets it.
        try rig.proxy.control(["cut": ["after": 100_000, "count": 2, "path": "/nodes/"]])
        let first = try await rig.downloads(partSize: 512 << 10, parallelParts: 1).nodeData(NodeID("one"))
        #expect(try rig.plaintext(first) == one)
        #expect(try rig.proxy.stats().cuts == 2)
        let size = try rig.cloudFileSize("one")
        let sent = try rig.sent("one")
        #expect(sent >= size && sent <= size + 2 * 100_000, "\(sent) bytes sent for a \(size)-byte object and two cuts")

        // Three parts in flight, each cut once.
        try rig.proxy.control(["reset_stats": true, "cut": ["after": 50_000, "count": 3, "path": "/nodes/"]])
        let second = try await rig.downloads(partSize: 256 << 10, parallelParts: 3).nodeData(NodeID("three"))
        #expect(try rig.plaintext(second) == three)
        #expect(try rig.proxy.stats().cuts == 3)
        await #expect(try rig.setup.b.files.partialDownload(NodeID("three")) == nil)
    }

    @Test func connectionsThatKeepBeingCutAreAClearErrorThenTheDownloadResumes() async throws {
        let data = CloudTests.bytes(1_200_000, seed: 103)
        let rig = try await Rig(["cut": data, "crawl": data])
        // Every answer is cut after 60,000 bytes: a remote may crawl on (each retry brings bytes) or give up,
        // but it never gives wrong bytes or another kind of error.
        try rig.proxy.control(["cut": ["after": 60_000, "count": 1_000, "path": "/nodes/" + CloudLayout.nodeName(try NodeID("crawl"), with: rig.setup.a)]])
        do {
            let export = try await rig.downloads(parallelParts: 2).nodeData(NodeID("crawl"))
            #expect(try rig.plaintext(export) == data)
        } catch let error as RemoteError {
            #expect(error.code == .unreachable, "\(error)")
        }

        // Every answer is cut before its first body byte: no progress, so a clear "unreachable".
        try rig.proxy.control(["cut": ["after": 0, "count": 1_000, "path": "/nodes/" + CloudLayout.nodeName(try NodeID("cut"), with: rig.setup.a)]])
        let error = await failure { try await rig.downloads(parallelParts: 2).nodeData(NodeID("cut")) }
        #expect(error?.code == .unreachable, "\(String(describing: error))")
        await #expect(try rig.setup.b.files.nodeFile(NodeID("cut")) == nil, "no file from a failed download")
        #expect(try await rig.setup.b.outline.entry(NodeID("cut")) != nil, "a lost connection is not a deletion")

        try rig.proxy.control(["clear": true])
        let export = try await rig.downloads(parallelParts: 2).nodeData(NodeID("cut"))
        #expect(try rig.plaintext(export) == data)
    }

    // MARK: 503 bursts and outages

    @Test func serviceUnavailableBurstsAreRetried() async throws {
        let data = CloudTests.bytes(1_000_000, seed: 104)
        let rig = try await Rig(["busy": data])
        // Bursts of two 503s: for the HEAD, then for the first part's GET (the remote makes 3 attempts).
        try rig.proxy.control(["fail": [["status": 503, "count": 2, "method": "HEAD", "path": "/nodes/"],
                                        ["status": 503, "count": 2, "method": "GET", "path": "/nodes/"]]])
        let export = try await rig.downloads(parallelParts: 1).nodeData(NodeID("busy"))
        #expect(try rig.plaintext(export) == data)
        let stats = try rig.proxy.stats()
        #expect(stats.failures == 4)
        let failed = stats.requests.filter { $0.status == 503 }.map(\.method)
        #expect(failed.sorted() == ["GET", "GET", "HEAD", "HEAD"], "\(failed)")
        #expect(try rig.sent("busy") == rig.cloudFileSize("busy"), "the burst costs no extra body bytes")
    }

    @Test func anOutageIsUnreachableAndNeverADeletion() async throws {
        let kept = CloudTests.bytes(400_000, seed: 105)
        let other = CloudTests.bytes(400_000, seed: 106)
        let rig = try await Rig(["kept": kept, "other": other])
        let downloads = rig.downloads()
        _ = try await downloads.nodeData(NodeID("kept"))

        // The server answers 503 to everything.
        try rig.proxy.control(["fail": ["status": 503, "count": 100_000]])
        let error = await failure { try await downloads.nodeData(NodeID("other")) }
        #expect(error?.code == .unreachable, "\(String(describing: error))")
        do {
            _ = try await CloudSync(manager: rig.setup.b, remote: rig.remote).pull()
            Issue.record("a pull during an outage succeeded")
        } catch let error as RemoteError {
            #expect(error.code == .unreachable)
        }
        // The listing works but one record's server is down: still not a deletion.
        try rig.proxy.control(["fail": ["status": 503, "count": 100_000, "path": "/" + CloudLayout.record(try NodeID("other"), with: rig.setup.b)]])
        do {
            let result = try await CloudSync(manager: rig.setup.b, remote: rig.remote).pull()
            Issue.record("a pull that could not read a record succeeded: \(result)")
        } catch let error as RemoteError {
            #expect(error.code == .unreachable)
        }
        #expect(try await rig.setup.b.outline.entry(NodeID("other")) != nil, "an outage deleted a node from the outline")
        #expect(try await rig.setup.b.outline.entry(NodeID("kept")) != nil, "an outage deleted a node from the outline")
        await #expect(try rig.setup.b.files.nodeFile(NodeID("kept")) != nil, "an outage deleted a local copy")

        try rig.proxy.control(["clear": true])
        #expect(try rig.plaintext(try await downloads.nodeData(NodeID("other"))) == other)
    }

    // MARK: The cloud file replaced between parts

    @Test func anETagChangeBetweenPartsRestartsTheDownload() async throws {
        let old = CloudTests.bytes(1_500_000, seed: 107)
        let rig = try await Rig(["changing": old])
        let copy = try rig.copy(of: "changing", name: "copy")
        let target = rig.setup.remote.root + "/" + (try rig.cloudFile("changing"))
        // After two parts, the file nginx serves is written again (new mtime, so a new ETag).
        try rig.proxy.control(["replace": ["path": "/" + (try rig.cloudFile("changing")), "target": target,
                                           "sources": [copy], "after": 2]])
        let export = try await rig.downloads(partSize: 256 << 10, parallelParts: 2).nodeData(NodeID("changing"))
        #expect(try rig.plaintext(export) == old)
        let stats = try rig.proxy.stats()
        #expect(stats.replacements == 1)
        #expect(stats.requests.contains { $0.status == 412 }, "If-Match caught the change: \(stats.requests.map(\.status))")
        await #expect(try rig.setup.b.files.partialDownload(NodeID("changing")) == nil)
    }

    /// Another version put in the place of the one the record names, between parts: the restart reads its
    /// header, whose file ID is not the record's, and refuses it; nothing of either is kept.
    @Test func anotherVersionPutInPlaceBetweenPartsIsRefused() async throws {
        let old = CloudTests.bytes(1_500_000, seed: 107)
        let new = CloudTests.bytes(1_500_000, seed: 108)
        let rig = try await Rig(["changing": old])
        let replacement = try rig.replacement(for: "changing", data: new, name: "new")
        let target = rig.setup.remote.root + "/" + (try rig.cloudFile("changing"))
        try rig.proxy.control(["replace": ["path": "/" + (try rig.cloudFile("changing")), "target": target,
                                           "sources": [replacement], "after": 2]])
        let error = await failure { try await rig.downloads(partSize: 256 << 10, parallelParts: 2).nodeData(NodeID("changing")) }
        #expect(error?.code == .invalidResponse && error?.message.contains("not the version its record names") == true, "\(String(describing: error))")
        await #expect(try rig.setup.b.files.nodeFile(NodeID("changing")) == nil)
        await #expect(try rig.setup.b.files.partialDownload(NodeID("changing")) == nil)
    }

    @Test func aCloudFileThatKeepsChangingIsAClearChangedError() async throws {
        let old = CloudTests.bytes(1_500_000, seed: 109)
        let rig = try await Rig(["flapping": old])
        let first = try rig.copy(of: "flapping", name: "copy1")
        let second = try rig.copy(of: "flapping", name: "copy2")
        let target = rig.setup.remote.root + "/" + (try rig.cloudFile("flapping"))
        // Replaced before every second GET: no attempt ever gets two parts of one version.
        try rig.proxy.control(["replace": ["path": "/" + (try rig.cloudFile("flapping")), "target": target,
                                           "sources": [first, second], "after": 1, "every": 2]])
        let error = await failure { try await rig.downloads(partSize: 256 << 10, parallelParts: 1).nodeData(NodeID("flapping")) }
        #expect(error?.code == .changed, "\(String(describing: error))")
        await #expect(try rig.setup.b.files.nodeFile(NodeID("flapping")) == nil)
        #expect(try rig.proxy.stats().replacements >= 3, "restarted from zero each time")
    }

    // MARK: Servers that ignore ranges, are slow, or stall

    @Test func aServerThatIgnoresTheRangeIsHandled() async throws {
        let data = CloudTests.bytes(1_000_000, seed: 111)
        let rig = try await Rig(["whole": data])
        // Two parts (the first and one in the middle) are answered 200 with the whole object.
        try rig.proxy.control(["ignore_range": ["count": 2, "path": "/nodes/"]])
        let export = try await rig.downloads(partSize: 128 << 10, parallelParts: 2).nodeData(NodeID("whole"))
        #expect(try rig.plaintext(export) == data)
        let stats = try rig.proxy.stats()
        #expect(stats.ignoredRanges == 2)
        #expect(stats.requests.filter { $0.status == 200 && $0.method == "GET" }.count == 2)
    }

    @Test func aSlowServerGivesTheRightBytesAndHonestProgress() async throws {
        let data = CloudTests.bytes(3_000_000, seed: 112)
        let rig = try await Rig(["slow": data])
        let rate = 6_000_000
        try rig.proxy.control(["throttle": rate])
        final class Seen: Sendable { let list = Locked<[DownloadProgress]>([]) }
        let seen = Seen()
        let started = Date()
        let export = try await rig.downloads(partSize: 128 << 10, parallelParts: 4)
            .nodeData(NodeID("slow")) { progress in seen.list.withLock { $0.append(progress) } }
        let elapsed = Date().timeIntervalSince(started)
        #expect(try rig.plaintext(export) == data)
        let size = try rig.cloudFileSize("slow")
        #expect(elapsed >= 0.8 * Double(size) / Double(rate), "the proxy throttled: \(elapsed) s")

        let reports = seen.list.withLock { $0 }
        #expect(reports.count >= 3, "reports while the bytes arrive, not only at the end: \(reports.count)")
        #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.completedBytes <= $1.completedBytes }, "progress never goes back")
        #expect(reports.allSatisfy { $0.totalBytes == UInt64(size) && $0.resumedBytes == 0 })
        #expect(reports.last?.completedBytes == UInt64(size))
        #expect(reports.contains { $0.completedBytes > 0 && $0.fractionCompleted < 1 && $0.estimatedTimeRemaining != nil },
                "bytes and an ETA while it runs")
        let throughput = reports.last?.throughput ?? 0
        // Honest: never more than the server can send (a busy machine may make it less, so no lower bound).
        #expect(throughput > 0 && throughput < Double(rate) * 1.5, "throughput \(throughput) B/s at a \(rate) B/s server")
    }

    @Test func aStallInTheMiddleOfABodyIsGivenUpAfterTheTimeoutAndTheRestAskedAgain() async throws {
        let data = CloudTests.bytes(800_000, seed: 113)
        let rig = try await Rig(["stall": data]) { HTTPRemote(url: $0, timeout: .seconds(1)) }
        try rig.proxy.control(["stall": ["after": 100_000, "seconds": 6, "count": 1, "path": "/nodes/"]])
        let export = try await rig.downloads(partSize: 256 << 10, parallelParts: 2).nodeData(NodeID("stall"))
        #expect(try rig.plaintext(export) == data)
        let stats = try rig.proxy.stats()
        #expect(stats.stalls == 1)
        // The read timeout (1 s of silence) ended the stalled body; the rest of its range was asked again,
        // from where the bytes stopped (not from a part boundary).
        let starts = stats.requests.filter { $0.method == "GET" && $0.path.hasPrefix("/nodes/") }
            .compactMap { $0.range?.split(separator: "=").last?.split(separator: "-").first.flatMap { UInt64($0) } }
        #expect(starts.contains { $0 % UInt64(256 << 10) != 0 }, "a GET for the rest of the stalled part: \(starts)")
    }

    // MARK: Coalescing, counted at the proxy

    @Test func twentyConcurrentReadersMakeOneTransferAtTheServer() async throws {
        let data = CloudTests.bytes(3_000_000, seed: 114)
        let rig = try await Rig(["hot": data])
        // A little slower than loopback, so that the readers really overlap the transfer.
        try rig.proxy.control(["throttle": 30_000_000])
        let partSize: UInt64 = 256 << 10
        let downloads = rig.downloads(partSize: partSize, parallelParts: 4)
        let results = try await withThrowingTaskGroup(of: Data.self) { group in
            for _ in 0..<20 {
                group.addTask { try CloudTests().plaintext(try await downloads.nodeData(NodeID("hot"))) }
            }
            return try await group.reduce(into: [Data]()) { $0.append($1) }
        }
        #expect(results.count == 20 && results.allSatisfy { $0 == data })
        let size = try rig.cloudFileSize("hot")
        let path = try #require(try rig.proxy.stats().paths["/" + (try rig.cloudFile("hot"))])
        #expect(path.bytes == size, "the object crossed the wire once: \(path.bytes) bytes for \(size)")
        #expect(path.gets == (size + Int(partSize) - 1) / Int(partSize), "one GET per part: \(path.gets)")
        #expect(path.heads == 1, "one transfer asks for the ETag once: \(path.heads)")
    }
}
