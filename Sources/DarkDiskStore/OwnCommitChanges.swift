/// The rows of the index's change table (`entryChange`) that this process's drive journal wrote for the
/// commits of its own writers, by range of rows and node. A mount shows those commits to the kernel in
/// `/files` as its requests make them, so its store watcher tells the kernel of these rows only for the ID
/// view (`DiskManager.entryChanges(after:skippingOwnCommits:)`): a `tar x` no longer has every name it just
/// made dropped from the kernel's caches a second later, which took the folder's lock once per name and cost
/// the requests meanwhile 7–16 % of their time. Other processes, which did not see the commits, read every row.
struct OwnCommitChanges: Sendable {
    /// One transaction's rows and the nodes whose rows in that range the mount has shown already.
    struct Batch: Sendable {
        let rows: ClosedRange<Int64>
        let nodes: Set<String>
    }

    /// Batches not yet read past; a process whose watcher never reads (none runs) keeps only the newest.
    private(set) var batches: [Batch] = []
    static let limit = 1_000

    /// Notes a transaction's batch (in the order they committed: their rows only grow).
    mutating func add(_ batch: Batch) {
        guard !batch.nodes.isEmpty else { return }
        if batches.count >= Self.limit { batches.removeFirst(batches.count - Self.limit + 1) }
        batches.append(batch)
    }

    /// Whether row `seq`, which names `node`, is one of this process's own commits (a binary search: the
    /// batches' row ranges are ordered and do not overlap).
    func contains(_ seq: Int64, node: String) -> Bool {
        var low = 0, high = batches.count
        while low < high {
            let middle = (low + high) / 2
            if batches[middle].rows.upperBound < seq { low = middle + 1 } else { high = middle }
        }
        return low < batches.count && batches[low].rows.contains(seq) && batches[low].nodes.contains(node)
    }

    /// Forgets the batches that end at or before row `seq` (read past).
    mutating func forget(through seq: Int64) {
        batches.removeAll { $0.rows.upperBound <= seq }
    }
}
