import DarkDiskStore
import DarkDiskCloud
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// Model test: two stores sharing one bucket (two machines) edit and delete the same few nodes
/// at random, at the same time, round after round; each round both then pull. Nothing may be lost: of the
/// versions written to one node in a round, at most one lands on the node (both were based on the record
/// both had pulled), the node then reads as that one, and every other becomes a conflict copy that reads
/// as it. At the end every record names a cloud file that authenticates and both stores read the same bytes.
/// The stores run in this process, concurrently (the CLI tests run them as separate processes).
@Suite(.ownThreads) struct TwoStoreSyncTests {
    static let rounds = Int(ProcessInfo.processInfo.environment["DARKDISK_SYNC_ROUNDS"] ?? "") ?? 100

    /// On Ceph RGW too with `DARKDISK_TEST_RGW` (its deletes are conditional tombstone writes, as everywhere).
    @Test(arguments: ConditionalWriteTests.Kind.allCases) func twoStoresEditingTheSameNodesLoseNothing(_ kind: ConditionalWriteTests.Kind) async throws {
        let bucket = try await ConditionalWriteTests.Bucket(kind)
        let stores = [bucket.setup.a, bucket.setup.b]
        let syncs = [bucket.sync(stores[0], host: "machine-a"), bucket.sync(stores[1], host: "machine-b")]
        let nodes = try (0..<3).map { try NodeID("shared-\($0)") }
        // A node nobody deletes, so the bucket is never empty (a pull refuses an empty listing).
        try await syncs[0].push(dataFile: bucket.setup.file("anchor", Data("anchor".utf8)), nodeID: NodeID("anchor"))
        var random = SplitMix64(seed: 18)
        var written = 0, landed = 0, copies = 0, deletes = 0
        for round in 0..<Self.rounds {
            // Each store does one thing to a random node: mostly write a new version, sometimes delete it.
            let plans = (0..<2).map { store -> (node: NodeID, write: Data?) in
                let node = nodes[Int(random.next() % UInt64(nodes.count))]
                let deleting = random.next() % 5 == 0
                return (node, deleting ? nil : Data("round \(round) store \(store) \(random.next())".utf8))
            }
            let outcomes = try await withThrowingTaskGroup(of: (Int, CloudSync.PushResult?).self) { group in
                for (index, plan) in plans.enumerated() {
                    let sync = syncs[index]
                    let path = try bucket.setup.file("r\(round)-\(index)", plan.write ?? Data())
                    group.addTask {
                        guard plan.write != nil else {
                            // A delete of a node the other store changed first is refused: nothing is deleted.
                            do { try await sync.deleteNode(plan.node) } catch let error as RemoteError where error.code == .preconditionFailed {}
                            return (index, nil)
                        }
                        try await sync.queuePush(dataFile: path, nodeID: plan.node, name: "\(plan.node).txt")
                        return (index, try await sync.uploadQueued(plan.node))
                    }
                }
                var results: [Int: CloudSync.PushResult?] = [:]
                for try await (index, result) in group { results[index] = result }
                return results
            }
            for sync in syncs { _ = try await sync.pull() }

            for node in Set(plans.map(\.node)) {
                let writes = plans.indices.filter { plans[$0].node == node && plans[$0].write != nil }
                guard !writes.isEmpty else { deletes += 1; continue }
                let onNode = writes.filter { outcomes[$0]??.conflict == nil }
                #expect(onNode.count <= 1, "round \(round): two writes based on one record both landed on \(node)")
                for index in writes {
                    written += 1
                    let version = try #require(plans[index].write)
                    let result = try #require(outcomes[index] ?? nil, "round \(round): store \(index) did not upload its change")
                    if let copy = result.conflict {
                        copies += 1
                        #expect(copy.originalID == node)
                        #expect(try await bucket.content(copy.nodeID, on: stores[0]) == version, "round \(round): a conflict copy lost its version")
                    } else {
                        landed += 1
                        // Unless the other store deleted the node after this write landed (then refused), it reads as this.
                        if try await stores[0].outline.entry(node) != nil {
                            #expect(try await bucket.content(node, on: stores[0]) == version, "round \(round): \(node) does not read as the version that landed")
                        }
                    }
                }
            }
        }
        #expect(written == landed + copies && written > Self.rounds)
        #expect(copies > 0, "the rounds never raced (\(written) writes)")
        for sync in syncs { _ = try await sync.drainQueue(); _ = try await sync.pull() }
        let check = try await syncs[0].checkRemote()
        #expect(check.problems.isEmpty, "\(check.problems)")
        let outlineA = try await stores[0].outline.entries().map(\.nodeID), outlineB = try await stores[1].outline.entries().map(\.nodeID)
        #expect(outlineA == outlineB)
        for id in outlineA {
            #expect(try await bucket.content(id, on: stores[0]) == bucket.content(id, on: stores[1]), "\(id) reads differently on the two stores")
        }
        print("two stores over \(kind): \(Self.rounds) rounds, \(written) versions written, \(landed) landed on their node, \(copies) conflict copies, \(deletes) delete-only nodes")
    }
}
