@testable import DarkDiskCloud
import DarkDiskStore
import DarkDiskCrypto
import DarkDiskSync
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// The remote node's protocol driven at random, as a model-based test: a seeded state machine opens handles
/// on remote-only nodes, reads ranges of them (many at once), cancels handles, evicts the stored data, lets a
/// second downloader of the same store (another process, in real life) fetch or refresh a node, and makes the
/// server stall or cut connections. Every answered byte is checked against the node's plaintext; a read may
/// fail only as a read of an unreachable remote or of a cancelled handle, and never hangs; once the faults
/// stop and every ticket is given up, no transfer or node owner is left, and every node reads whole.
@Suite(.ownThreads) struct RemoteNodeModelTests {
    /// A reader's open file: the download ticket that keeps its transfer going, and the partial file's
    /// reader it got last (as the mount's handles keep them).
    final class Handle: Sendable {
        let node: Int
        private let state: Locked<(ticket: DownloadTicket<NodeDataDownload>?, partial: PartialReader?)>
        init(node: Int, ticket: DownloadTicket<NodeDataDownload>) {
            self.node = node
            state = Locked((ticket, nil))
        }
        var ticket: DownloadTicket<NodeDataDownload>? { state.withLock { $0.ticket } }
        var partial: PartialReader? { state.withLock { $0.partial } }
        func keep(_ ticket: DownloadTicket<NodeDataDownload>?, _ partial: PartialReader?) {
            state.withLock { state in
                if let ticket { state.ticket = ticket }
                if let partial { state.partial = partial }
            }
        }
        func cancel() { state.withLock { $0.ticket }?.cancel() }
    }

    /// Whether the server stalls, and how many stalls began: a read may wait out its timeout only if the
    /// server stalled while it waited (a failed transfer answers its readers at once).
    final class Stalls: Sendable {
        private let state = Locked((stalled: false, began: 0))
        func set(_ stalled: Bool) { state.withLock { if stalled && !$0.stalled { $0.began += 1 }; $0.stalled = stalled } }
        var now: (stalled: Bool, began: Int) { state.withLock { $0 } }
    }

    /// How long the process kept work waiting for a thread, sampled every 50 ms: the overshoot of a short
    /// sleep (Swift's cooperative pool) and the wait of a no-op on the blocking pool. A read that waited out
    /// its timeout while the machine held the download's work back that long is not the protocol's fault.
    final class Starvation: Sendable {
        private let samples = Locked<[(at: ContinuousClock.Instant, lag: Duration)]>([])
        private let probe = Locked<Task<Void, Never>?>(nil)

        func start() {
            probe.withLock { probe in
                probe = Task.detached { [samples] in
                    while !Task.isCancelled {
                        let asleep = ContinuousClock.now
                        try? await Task.sleep(for: .milliseconds(50))
                        let woken = ContinuousClock.now
                        _ = await BlockingPool.shared.run { () -> Int in 0 }
                        let lag = max(.zero, woken - asleep - .milliseconds(50)) + (ContinuousClock.now - woken)
                        samples.withLock { $0.append((ContinuousClock.now, lag)) }
                    }
                }
            }
        }

        func stop() { probe.withLock { $0 }?.cancel() }

        /// The time work waited for a thread between `start` and `end`.
        func lag(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) -> Duration {
            samples.withLock { samples in
                samples.filter { $0.at >= start && $0.at - $0.lag <= end }.reduce(.zero) { $0 + $1.lag }
            }
        }
    }

    enum Outcome: Sendable, CustomStringConvertible {
        case bytes
        case wrongBytes(String)
        case allowedFailure
        case starved
        case failure(String)
        case hung(String)

        var description: String {
            switch self {
            case .bytes: "bytes"
            case .wrongBytes(let what): "wrong bytes: \(what)"
            case .allowedFailure: "allowed failure"
            case .starved: "waited out its timeout on a machine that kept it from threads"
            case .failure(let what): "failure: \(what)"
            case .hung(let what): "hung: \(what)"
            }
        }
    }

    /// Reads plaintext [offset, offset + count) of node `index` through `handle` and checks it.
    static func read(_ downloads: DownloadManager, _ handle: Handle, ids: [NodeID], keys: [SymmetricKey], data: [Data],
                     offset: Int, count: Int, timeout: Duration, stalls: Stalls, starvation: Starvation,
                     before: (stalled: Bool, began: Int)? = nil) async -> Outcome {
        let index = handle.node
        let before = before ?? stalls.now
        let started = ContinuousClock.now
        let answered = Locked<Outcome?>(nil)
        let task = Task { () -> Outcome in
            do {
                let (source, ticket) = try await downloads.read(ids[index], key: keys[index], plaintext: UInt64(offset)..<UInt64(offset + count),
                                                                ticket: handle.ticket, timeout: timeout, known: handle.partial)
                let reader: CryptoFileReader
                switch source {
                case .stored(let export):
                    handle.keep(ticket, nil)
                    reader = try export.reader()
                case .downloading(let partial):
                    handle.keep(ticket, partial)
                    reader = partial.reader
                }
                let got = Data(try reader.read(section: reader.dataSection, offset: UInt64(offset), count: count))
                let expected = data[index][offset..<offset + count]
                guard got == expected else {
                    let first = zip(got, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(got.count, expected.count)
                    return .wrongBytes("node \(index) [\(offset), +\(count)): \(got.count) bytes, first difference at +\(first)")
                }
                return .bytes
            } catch let error as RemoteError where error.code == .unreachable {
                let after = stalls.now
                if error.message.contains("did not arrive within"), !before.stalled, !after.stalled, before.began == after.began {
                    let lag = starvation.lag(from: started, to: .now)
                    if lag >= timeout / 4 { return .starved }
                    let node = downloads.nodes.existing(ids[index])?.summary ?? "no owner of node \(index) left"
                    return .failure("node \(index) [\(offset), +\(count)) waited out its timeout though the server never stalled "
                                    + "(threads were held back for \(lag) meanwhile): \(error); now \(node)")
                }
                return .allowedFailure
            } catch is CancellationError {
                return .allowedFailure
            } catch {
                return .failure("node \(index) [\(offset), +\(count)): \(error)")
            }
        }
        // A read is answered within its timeout (twice: the header's wait, then the chunks'), plus slack for a
        // loaded machine; past that it hangs.
        let limit = timeout * 2 + .seconds(60)
        let watchdog = Task {
            guard (try? await Task.sleep(for: limit)) != nil else { return }  // cancelled: answered in time
            answered.withLock { state in if state == nil { state = .hung("node \(index) [\(offset), +\(count)) not answered within \(limit)") } }
        }
        let outcome = await task.value
        watchdog.cancel()
        return answered.withLock { state in
            if case .hung(let what) = state { state = .hung("\(what) (timeout \(timeout); answered after \(ContinuousClock.now - started): \(outcome))") }
            if state == nil { state = outcome }
            return state!
        }
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func randomOpensReadsCancelsEvictionsAndStallsAnswerOnlyTrueBytes(seed: UInt64) async throws {
        var random = SplitMix64(seed: seed)
        let setup = try CloudTests.Setup()
        let sizes = [1_900_000, 700_000, 64_000]
        var ids: [NodeID] = []
        var data: [Data] = []
        for (index, size) in sizes.enumerated() {
            let bytes = CloudTests.bytes(size, seed: seed * 100 + UInt64(index))
            ids.append(try await setup.pushedAndPulled(bytes, as: "model-\(seed)-\(index)"))
            data.append(bytes)
        }
        let keys = try ids.map { try setup.key(of: $0) }
        let baseDelay = 20_000
        let (downloads, server) = setup.slowDownloads(microsecondsPer64KiB: baseDelay)
        let otherServer = FaultyRemote(setup.remote)
        otherServer.delayPer64KiB.store(baseDelay, ordering: .relaxed)
        let other = DownloadManager(manager: setup.b, remote: otherServer, partSize: 256 * 1024, parallelParts: 2, checkpointBytes: 64 * 1024)

        var handles: [Handle] = []
        var otherTickets: [DownloadTicket<NodeDataDownload>] = []
        var reads: [Task<Outcome, Never>] = []
        var stalled = false
        let stalls = Stalls()
        var cut = false
        var counts: [String: Int] = [:]
        let starvation = Starvation()
        starvation.start()
        defer { starvation.stop() }

        for _ in 0..<160 {
            let action = Int.random(in: 0..<100, using: &random)
            switch action {
            case 0..<15:  // open
                let node = Int.random(in: 0..<ids.count, using: &random)
                handles.append(Handle(node: node, ticket: downloads.downloadNodeData(ids[node], options: DownloadOptions(cacheToDiskManager: true))))
                counts["open", default: 0] += 1
            case 15..<55 where !handles.isEmpty:  // reads, several at once
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    let handle = handles[Int.random(in: 0..<handles.count, using: &random)]
                    let size = sizes[handle.node]
                    let offset = Int.random(in: 0..<size, using: &random)
                    let count = min(size - offset, Int.random(in: 1...200_000, using: &random))
                    let timeout: Duration = stalled ? .milliseconds(200) : .seconds(20)
                    let (captured, capturedIDs, capturedKeys, capturedData) = (handle, ids, keys, data)
                    let before = stalls.now
                    reads.append(Task {
                        await Self.read(downloads, captured, ids: capturedIDs, keys: capturedKeys, data: capturedData,
                                        offset: offset, count: count, timeout: timeout, stalls: stalls, starvation: starvation,
                                        before: before)
                    })
                }
                counts["read", default: 0] += 1
            case 55..<65 where !handles.isEmpty:  // close
                handles.remove(at: Int.random(in: 0..<handles.count, using: &random)).cancel()
                counts["close", default: 0] += 1
            case 65..<72:  // evict a node's stored data (retained readers keep theirs)
                _ = try? setup.b.outline.evictNodeData(ids[Int.random(in: 0..<ids.count, using: &random)])
                counts["evict", default: 0] += 1
            case 72..<80:  // another downloader of the same store fetches a node, or refreshes it
                let node = Int.random(in: 0..<ids.count, using: &random)
                let refresh = Bool.random(using: &random)
                otherTickets.append(other.downloadNodeData(ids[node], options: DownloadOptions(cacheToDiskManager: true, policy: refresh ? .remote : .storedOrRemote)))
                if otherTickets.count > 2, Bool.random(using: &random) { otherTickets.removeFirst().cancel() }
                counts["other", default: 0] += 1
            case 80..<84:  // the server stalls, or recovers
                stalled.toggle()
                stalls.set(stalled)
                server.delayPer64KiB.store(stalled ? 400_000 : baseDelay, ordering: .relaxed)
                counts["stall", default: 0] += 1
            case 84..<87:  // connections are cut after a few more reads, or no longer
                cut.toggle()
                server.failAfterReads.store(cut ? server.reads.load(ordering: .relaxed) + Int.random(in: 0...3, using: &random) : Int.max, ordering: .relaxed)
                counts["cut", default: 0] += 1
            default:  // time passes
                try await Task.sleep(for: .milliseconds(Int.random(in: 10...120, using: &random)))
            }
            if reads.count >= 12 {
                for read in reads { record(await read.value, into: &counts) }
                reads = []
            }
        }
        for read in reads { record(await read.value, into: &counts) }

        // Faults off, every ticket given up: nothing is left running or owned.
        server.delayPer64KiB.store(0, ordering: .relaxed)
        stalls.set(false)
        server.failAfterReads.store(Int.max, ordering: .relaxed)
        otherServer.delayPer64KiB.store(0, ordering: .relaxed)
        for handle in handles { handle.cancel() }
        for ticket in otherTickets { ticket.cancel() }
        let settled = await eventually(within: 30) {
            downloads.activeTransfers == 0 && downloads.nodes.count == 0 && other.activeTransfers == 0 && other.nodes.count == 0
        }
        #expect(settled, "left: \(downloads.activeTransfers) transfers, \(downloads.nodes.count) node owners; other \(other.activeTransfers), \(other.nodes.count)")

        // And every node reads whole, through a new handle.
        for (index, id) in ids.enumerated() {
            let handle = Handle(node: index, ticket: downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true)))
            let outcome = await Self.read(downloads, handle, ids: ids, keys: keys, data: data, offset: 0, count: sizes[index], timeout: .seconds(30), stalls: stalls,
                                          starvation: starvation)
            guard case .bytes = outcome else {
                Issue.record("node \(index) does not read whole once the faults stopped: \(outcome)")
                continue
            }
            handle.cancel()
        }
        #expect(counts["bytes", default: 0] >= 30, "too few reads answered with bytes to mean anything: \(counts)")
    }

    private func record(_ outcome: Outcome, into counts: inout [String: Int]) {
        switch outcome {
        case .bytes: counts["bytes", default: 0] += 1
        case .allowedFailure: counts["failed", default: 0] += 1
        case .starved: counts["starved", default: 0] += 1
        case .wrongBytes, .failure, .hung: Issue.record("\(outcome)")
        }
    }
}
