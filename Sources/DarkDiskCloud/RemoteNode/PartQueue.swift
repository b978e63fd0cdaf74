/// The parts of a node's cloud file still to fetch, as a value: workers take them in file order, but a part
/// a reader waits for goes first (a `dd skip=` deep into a large node does not wait for the parts before it).
struct PartQueue: Sendable {
    /// Most bytes a reader's wait makes urgent at once: a slice from the offset it needs, cut out of its
    /// part (the rest stays in order), so the worker serving it is soon free for the next reader.
    static let urgentSlice: UInt64 = 1 << 20

    private(set) var pending: [Range<UInt64>] = []
    private(set) var urgent: [Range<UInt64>] = []
    /// No more parts are handed out (every part is fetched, or the fetch is failing).
    private(set) var isClosed = false

    init(pending: [Range<UInt64>] = []) {
        self.pending = pending
    }

    /// The next part for a worker: urgent parts first, then in file order.
    mutating func next() -> Range<UInt64>? {
        if !urgent.isEmpty { return urgent.removeFirst() }
        return pending.isEmpty ? nil : pending.removeFirst()
    }

    /// The next urgent part, for the worker that serves only readers.
    mutating func nextUrgent() -> Range<UInt64>? {
        urgent.isEmpty ? nil : urgent.removeFirst()
    }

    mutating func close() {
        isClosed = true
        pending = []
        urgent = []
    }

    /// Moves what `range` needs of the pending parts to the urgent queue, as slices of at least
    /// `urgentSlice` bytes from where the range starts.
    mutating func prioritize(_ range: Range<UInt64>) {
        guard !range.isEmpty, pending.contains(where: { $0.overlaps(range) }) else { return }
        var remaining: [Range<UInt64>] = []
        for part in pending {
            guard part.overlaps(range) else {
                remaining.append(part)
                continue
            }
            let start = max(part.lowerBound, range.lowerBound)
            let end = min(part.upperBound, max(range.upperBound, start + Self.urgentSlice))
            if part.lowerBound < start { remaining.append(part.lowerBound..<start) }
            urgent.append(start..<end)
            if end < part.upperBound { remaining.append(end..<part.upperBound) }
        }
        pending = remaining
    }
}
