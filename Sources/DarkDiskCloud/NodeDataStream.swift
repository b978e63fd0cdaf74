import DarkDiskStore
import Foundation
import DarkDiskSync
#if canImport(Glibc)
import Glibc
#endif

/// A node's data download as readers see it while it runs: which bytes of the cloud file are on disk, a
/// descriptor to read them, and the queue of parts, which a reader reorders so that the part it needs
/// comes next (a `dd skip=` deep into a large node does not wait for the parts before it).
///
/// Created by the first reader or transfer that needs it; the transfer activates it once its partial file
/// exists and ends it when the file is complete (readers then use the stored file) or the transfer failed.
final class NodeDataStream: Sendable {
    /// What a waiting reader is told.
    enum Event: Sendable {
        /// The bytes are in the partial file, readable through this descriptor.
        case available(SharedDescriptor)
        /// The transfer finished: the node is local now (or the transfer failed before the bytes came).
        case ended((any Error)?)
    }

    private struct Waiter {
        let range: Range<UInt64>
        let handler: @Sendable (Event) -> Void
    }

    private struct State {
        var descriptor: SharedDescriptor?
        var ranges: [Range<UInt64>] = []
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        var pending: [Range<UInt64>] = []
        var urgent: [Range<UInt64>] = []
        var urgentWorker: CheckedContinuation<Range<UInt64>?, Never>?
        var queueClosed = false
        var ended = false
        /// A transfer fetching the node serves this stream (`activate`).
        var fetching = false
        /// The partial file of another process's download this stream serves from (`mirror`).
        var mirroredPath: String?
    }

    private let state = Locked(State())

    /// Bytes of the cloud file on disk so far, as readers see them (ahead of the index's checkpoints); nil
    /// before the transfer has its partial file and after it ended.
    var receivedBytes: UInt64? {
        state.withLock { state in
            guard state.descriptor != nil, !state.ended else { return nil }
            return state.ranges.reduce(0) { $0 + UInt64($1.count) }
        }
    }

    /// Whether readers are served from this stream now (activated or mirrored, not yet ended).
    var isActive: Bool {
        state.withLock { $0.descriptor != nil && !$0.ended }
    }

    /// Whether a transfer fetching the node serves this stream now (activated, not yet ended): only that
    /// transfer ends it.
    var isFetching: Bool {
        state.withLock { $0.fetching && !$0.ended }
    }

    /// Starts serving readers: the partial file, the ranges it already has, the parts still to fetch.
    func activate(path: String, ranges: [Range<UInt64>], pending: [Range<UInt64>]) throws(RemoteError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw RemoteError(.io, "cannot open \(path): \(String(cString: strerror(errno)))") }
        let descriptor = SharedDescriptor(fd)
        let ready = state.withLock { state -> [Waiter] in
            state.descriptor = descriptor
            state.ranges = ranges
            state.pending = pending
            state.fetching = true
            state.mirroredPath = nil
            for waiter in state.waiters.values { prioritize(waiter.range, &state) }
            return takeSatisfied(&state)
        }
        for waiter in ready { waiter.handler(.available(descriptor)) }
    }

    /// Serves readers from another process's partial download of the node (it holds the node's lock), as far
    /// as `ranges` (what its index row records) go; nothing is fetched for them here. A stream a fetching
    /// transfer serves, or one that ended, is left alone.
    func mirror(path: String, ranges: [Range<UInt64>]) {
        let sameFile = state.withLock { state -> Bool? in
            state.fetching || state.ended ? nil : state.mirroredPath == path
        }
        guard let sameFile else { return }
        var opened: SharedDescriptor?
        if !sameFile {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return }  // gone meanwhile (finished or restarted): the next look sees why
            opened = SharedDescriptor(fd)
        }
        let (ready, descriptor) = state.withLock { state -> ([Waiter], SharedDescriptor?) in
            guard !state.fetching, !state.ended else { return ([], nil) }
            if let opened {
                // Another file (a first look, or the other process started over): only its ranges count.
                state.descriptor = opened
                state.mirroredPath = path
                state.ranges = []
            }
            guard state.mirroredPath == path else { return ([], nil) }
            for range in ranges { state.ranges = PartialDownload.merge(state.ranges, range) }
            return (takeSatisfied(&state), state.descriptor)
        }
        if let descriptor { for waiter in ready { waiter.handler(.available(descriptor)) } }
    }

    /// Calls `handler` once `range` is on disk or the stream ends; returns a token for `cancelWait`.
    @discardableResult
    func wait(for range: Range<UInt64>, _ handler: @escaping @Sendable (Event) -> Void) -> UInt64? {
        let outcome = state.withLock { state -> (UInt64?, Event?, CheckedContinuation<Range<UInt64>?, Never>?, Range<UInt64>?) in
            if state.ended { return (nil, .ended(nil), nil, nil) }
            if let descriptor = state.descriptor, Self.covers(state.ranges, range) { return (nil, .available(descriptor), nil, nil) }
            let id = state.nextWaiter
            state.nextWaiter += 1
            state.waiters[id] = Waiter(range: range, handler: handler)
            guard state.descriptor != nil else { return (id, nil, nil, nil) }
            prioritize(range, &state)
            // Wake the urgent worker if it is idle and there is urgent work.
            if let worker = state.urgentWorker, !state.urgent.isEmpty {
                state.urgentWorker = nil
                return (id, nil, worker, state.urgent.removeFirst())
            }
            return (id, nil, nil, nil)
        }
        if let event = outcome.1 { handler(event) }
        if let worker = outcome.2 { worker.resume(returning: outcome.3) }
        return outcome.0
    }

    /// Forgets a waiter (a reader that gave up); returns false if it was already answered.
    func cancelWait(_ id: UInt64) -> Bool {
        state.withLock { $0.waiters.removeValue(forKey: id) != nil }
    }

    /// Notes bytes written to the partial file and answers the readers waiting for them.
    func received(_ range: Range<UInt64>) {
        let (ready, descriptor) = state.withLock { state -> ([Waiter], SharedDescriptor?) in
            state.ranges = PartialDownload.merge(state.ranges, range)
            return (takeSatisfied(&state), state.descriptor)
        }
        if let descriptor { for waiter in ready { waiter.handler(.available(descriptor)) } }
    }

    /// The next part for a worker: urgent parts (wanted by a reader) first, then in file order.
    func nextPart() -> Range<UInt64>? {
        state.withLock { state in
            if !state.urgent.isEmpty { return state.urgent.removeFirst() }
            return state.pending.isEmpty ? nil : state.pending.removeFirst()
        }
    }

    /// For the one extra worker that serves only readers: the next urgent part, waiting for one; nil once the
    /// queue is closed.
    /// Cancelling the waiting task closes the queue (the transfer is stopping).
    func nextUrgentPart() async -> Range<UInt64>? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Range<UInt64>?, Never>) in
                let answer = state.withLock { state -> Range<UInt64>?? in
                    if !state.urgent.isEmpty { return .some(state.urgent.removeFirst()) }
                    if state.queueClosed { return .some(nil) }
                    state.urgentWorker = continuation
                    return .none
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            closeQueue()
        }
    }

    /// No more parts will be handed out (the normal workers are done or the transfer is failing).
    func closeQueue() {
        let worker = state.withLock { state -> CheckedContinuation<Range<UInt64>?, Never>? in
            state.queueClosed = true
            state.pending = []
            state.urgent = []
            defer { state.urgentWorker = nil }
            return state.urgentWorker
        }
        worker?.resume(returning: nil)
    }

    /// Ends the stream: every waiter hears that the transfer finished (`error` nil) or failed.
    func end(_ error: (any Error)?) {
        closeQueue()
        let waiters = state.withLock { state -> [Waiter] in
            state.ended = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.handler(.ended(error)) }
    }

    /// Most bytes a reader's wait makes urgent at once: a slice from the offset it needs, cut out of its
    /// part (the rest stays in order), so the worker serving it is soon free for the next reader.
    static let urgentSlice: UInt64 = 1 << 20

    /// Moves what `range` needs of the pending parts to the urgent queue, as slices of at least
    /// `urgentSlice` bytes from where the range starts.
    private func prioritize(_ range: Range<UInt64>, _ state: inout State) {
        guard !range.isEmpty, state.pending.contains(where: { $0.overlaps(range) }) else { return }
        var remaining: [Range<UInt64>] = []
        for part in state.pending {
            guard part.overlaps(range) else {
                remaining.append(part)
                continue
            }
            let start = max(part.lowerBound, range.lowerBound)
            let end = min(part.upperBound, max(range.upperBound, start + Self.urgentSlice))
            if part.lowerBound < start { remaining.append(part.lowerBound..<start) }
            state.urgent.append(start..<end)
            if end < part.upperBound { remaining.append(end..<part.upperBound) }
        }
        state.pending = remaining
    }

    private func takeSatisfied(_ state: inout State) -> [Waiter] {
        var ready: [Waiter] = []
        for (id, waiter) in state.waiters where Self.covers(state.ranges, waiter.range) {
            ready.append(waiter)
            state.waiters[id] = nil
        }
        return ready
    }

    static func covers(_ ranges: [Range<UInt64>], _ range: Range<UInt64>) -> Bool {
        range.isEmpty || ranges.contains { $0.lowerBound <= range.lowerBound && range.upperBound <= $0.upperBound }
    }
}

/// A read-only descriptor shared by the readers of a partial file; closed when the last one lets go. It
/// stays valid after the finished file is renamed into the store.
public final class SharedDescriptor: Sendable {
    public let fileDescriptor: Int32

    init(_ fd: Int32) {
        fileDescriptor = fd
    }

    deinit {
        close(fileDescriptor)
    }
}
