import DarkDiskStore
import DarkDiskSync

/// One node's data download and everything that waits on it (rclone's `vfscache.Item`): the transfers that
/// fetch it (one at a time; others wait in line behind it), the partial file as readers see it (its
/// descriptor, the ranges on disk, the parts still to fetch) and the readers waiting for ranges of it. Every
/// change of these happens under one lock, so a reader that comes at any moment (before a transfer holds the
/// node's download lock, while it fetches, between its end and its tickets' results) is answered by the
/// bytes, by a transfer's result, or by the next transfer: never left on something that already ended.
///
/// Tickets are for progress and cancellation only: a transfer runs while it has tickets; readers wait here.
///
/// Lock order: a lock is taken only while holding those above it; none is held across I/O or an await, and
/// waiters' handlers, a transfer's start and the urgent worker's continuation run after it is let go.
///
///     1. RemoteNodes.table       the nodes by ID
///     2. RemoteNode.state        this node's transfers, partial file, parts and waiters
///     3. Transfer.state          a transfer's tickets, progress and caching decision
///     4. DownloadTicket.state    a ticket's result and observers
final class RemoteNode: Sendable {
    let nodeID: NodeID
    let downloads: DownloadManager

    /// A transfer of the node's data and whether it asks the remote even when the node is stored.
    struct Fetch: Sendable {
        let transfer: Transfer<NodeDataDownload>
        let refresh: Bool
    }

    /// What a waiting reader is told.
    enum Event: Sendable {
        /// The bytes are in the partial file, readable through this descriptor.
        case available(SharedDescriptor)
        /// A transfer ended: the node landed (stored, or a temporary file), or it failed and no other follows.
        case landed(Result<NodeDataDownload, any Error>)
    }

    private struct Waiter {
        let range: Range<UInt64>
        let handler: @Sendable (Event) -> Void
    }

    private struct State {
        /// The transfer whose task fetches the node now (or waits for another process's download lock).
        var running: Fetch?
        /// Transfers that start, in order, when the running one ends (a refresh, a caching request after a
        /// "no", or one asked for while a cancelled one winds down). Empty whenever `running` is nil.
        var queued: [Fetch] = []
        /// How the last transfer ended, for a reader that comes after it while nothing runs.
        var outcome: Result<NodeDataDownload, any Error>?
        /// The partial file readers are served from: the running transfer's, or another process's.
        var file: SharedDescriptor?
        /// The path of another process's partial file served from (`mirror`); nil when this node fetches.
        var mirrored: String?
        /// The running transfer has its partial file and serves readers from it (`activate`).
        var fetching = false
        /// Bytes of the cloud file on disk in `file`.
        var ranges: [Range<UInt64>] = []
        var parts = PartQueue()
        var urgentWorker: CheckedContinuation<Range<UInt64>?, Never>?
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        /// Callers between finding this node in the table and registering what keeps it there.
        var users = 0
    }

    private let state = Locked(State())

    init(_ nodeID: NodeID, downloads: DownloadManager) {
        self.nodeID = nodeID
        self.downloads = downloads
    }

    /// Nothing runs, waits or is about to: the table may forget this node.
    var isIdle: Bool {
        state.withLock { $0.running == nil && $0.waiters.isEmpty && $0.users == 0 }
    }

    /// Bytes of the cloud file on disk so far, as readers see them (ahead of the index's checkpoints); nil
    /// while no partial file is served.
    var receivedBytes: UInt64? {
        state.withLock { state in
            guard state.file != nil else { return nil }
            return state.ranges.reduce(0) { $0 + UInt64($1.count) }
        }
    }

    /// The node's state in one line, for a failure's message: what runs and waits, and what is on disk.
    var summary: String {
        state.withLock { state in
            let running = state.running.map { $0.refresh ? "a refresh" : "a transfer" } ?? "nothing"
            let file = state.file == nil ? "no partial file" : (state.mirrored != nil ? "another process's partial file" : "its partial file")
            let waits = state.waiters.values.map { "\($0.range)" }.sorted().joined(separator: ", ")
            let outcome = state.outcome.map { result -> String in
                switch result {
                case .success: "landed"
                case .failure(let error): "failed (\(error))"
                }
            } ?? "none"
            return "node '\(nodeID)': \(running) running, \(state.queued.count) in line, \(file)\(state.fetching ? " (fetching)" : ""), "
                + "on disk \(state.ranges), waiting for [\(waits)], last outcome \(outcome), \(state.users) users"
        }
    }

    func enter() { state.withLock { $0.users += 1 } }
    func leave() { state.withLock { $0.users -= 1 } }

    // MARK: Transfers and tickets

    /// A ticket for the node's data: joins the running or a waiting transfer that can take it, else adds a
    /// new one (started at once when nothing runs).
    func ticket(_ options: DownloadOptions) -> DownloadTicket<NodeDataDownload> {
        let ticket = DownloadTicket<NodeDataDownload>(options: options)
        let start = state.withLock { state in enlist(ticket, &state) }
        if let start { begin(start) }
        return ticket
    }

    /// Attaches `ticket` to a transfer; returns a new transfer to start when nothing ran. Under the lock.
    private func enlist(_ ticket: DownloadTicket<NodeDataDownload>, _ state: inout State) -> Fetch? {
        let refresh = ticket.options.policy == .remote
        for fetch in [state.running].compactMap({ $0 }) + state.queued where fetch.refresh == refresh {
            if fetch.transfer.attach(ticket) { return nil }
        }
        let transfer = Transfer<NodeDataDownload>(onClose: { [weak self] closed in self?.closed(closed) })
        _ = transfer.attach(ticket)
        let fetch = Fetch(transfer: transfer, refresh: refresh)
        guard state.running == nil else {
            state.queued.append(fetch)
            return nil
        }
        state.running = fetch
        state.outcome = nil
        return fetch
    }

    private func begin(_ fetch: Fetch) {
        downloads.transfers.list(.nodeData(nodeID, fetch.refresh ? .remote : .storedOrRemote), fetch.transfer)
        fetch.transfer.start { try await self.run(fetch) }
    }

    private func run(_ fetch: Fetch) async throws -> NodeDataDownload {
        let result: Result<NodeDataDownload, any Error>
        do { result = .success(try await download(refresh: fetch.refresh, fetch.transfer)) } catch { result = .failure(error) }
        end(fetch, result)
        return try result.get()
    }

    /// The running transfer ended (before its tickets hear of it): a success answers every reader, a
    /// failure those no waiting transfer will serve; the next transfer in line starts.
    private func end(_ fetch: Fetch, _ result: Result<NodeDataDownload, any Error>) {
        let (answered, next, worker) = state.withLock { state -> ([Waiter], Fetch?, CheckedContinuation<Range<UInt64>?, Never>?) in
            guard state.running?.transfer === fetch.transfer else { return ([], nil, nil) }
            state.running = state.queued.isEmpty ? nil : state.queued.removeFirst()
            state.outcome = result
            state.file = nil
            state.mirrored = nil
            state.fetching = false
            state.ranges = []
            state.parts = PartQueue()
            defer { state.urgentWorker = nil }
            var answered: [Waiter] = []
            if case .success = result {
                answered = Array(state.waiters.values)
            } else if state.running == nil {
                answered = Array(state.waiters.values)
            }
            if !answered.isEmpty { state.waiters = [:] }
            return (answered, state.running, state.urgentWorker)
        }
        downloads.transfers.unlist(.nodeData(nodeID, fetch.refresh ? .remote : .storedOrRemote), fetch.transfer)
        worker?.resume(returning: nil)
        for waiter in answered { waiter.handler(.landed(result)) }
        if let next { begin(next) }
        downloads.nodes.removeIfIdle(self)
    }

    /// A transfer's last ticket went: one still waiting in line never starts (the running one is cancelled
    /// by its transfer and ends through `end`).
    private func closed(_ transfer: Transfer<NodeDataDownload>) {
        state.withLock { state in state.queued.removeAll { $0.transfer === transfer } }
    }

    // MARK: Readers

    /// Calls `handler` once bytes `range` of the cloud file are on disk, or a transfer ended in a way that
    /// answers it (the node landed; or the transfer failed and no other is in line). `ticket`, the caller's
    /// unfinished ticket, keeps a transfer going; without one (or when its transfer already ended without the
    /// node landing) a ticket with `options` joins or starts one. Returns the waiter's token for
    /// `cancelWait` (nil when answered at once) and the ticket the caller keeps.
    func wait(for range: Range<UInt64>, keeping ticket: DownloadTicket<NodeDataDownload>?, options: DownloadOptions,
              _ handler: @escaping @Sendable (Event) -> Void) -> (waiter: UInt64?, ticket: DownloadTicket<NodeDataDownload>) {
        let outcome = state.withLock { state -> (UInt64?, DownloadTicket<NodeDataDownload>, Event?, Fetch?, (CheckedContinuation<Range<UInt64>?, Never>, Range<UInt64>)?) in
            var kept = ticket
            var start: Fetch?
            if kept == nil {
                let fresh = DownloadTicket<NodeDataDownload>(options: options)
                start = enlist(fresh, &state)
                kept = fresh
            }
            if let file = state.file, Self.covers(state.ranges, range) { return (nil, kept!, .available(file), start, nil) }
            if state.running == nil {
                // The caller's transfer ended already (its tickets are about to hear how).
                if let landed = state.outcome, case .success = landed { return (nil, kept!, .landed(landed), start, nil) }
                let fresh = DownloadTicket<NodeDataDownload>(options: options)
                start = enlist(fresh, &state)
                kept = fresh
            }
            let id = state.nextWaiter
            state.nextWaiter += 1
            state.waiters[id] = Waiter(range: range, handler: handler)
            guard state.fetching else { return (id, kept!, nil, start, nil) }
            state.parts.prioritize(range)
            // Wake the urgent worker if it is idle and there is urgent work.
            if let worker = state.urgentWorker, let part = state.parts.nextUrgent() {
                state.urgentWorker = nil
                return (id, kept!, nil, start, (worker, part))
            }
            return (id, kept!, nil, start, nil)
        }
        if let start = outcome.3 { begin(start) }
        if let event = outcome.2 { handler(event) }
        if let (worker, part) = outcome.4 { worker.resume(returning: part) }
        return (outcome.0, outcome.1)
    }

    /// Forgets a waiter (a reader that was answered otherwise, or gave up); false if it was already answered.
    @discardableResult
    func cancelWait(_ id: UInt64) -> Bool {
        let removed = state.withLock { $0.waiters.removeValue(forKey: id) != nil }
        if removed { downloads.nodes.removeIfIdle(self) }
        return removed
    }

    // MARK: The partial file, for the running transfer

    /// Starts serving readers from this transfer's partial file: the ranges it already has, the parts still
    /// to fetch (those readers wait for first).
    func activate(path: String, ranges: [Range<UInt64>], pending: [Range<UInt64>]) throws(RemoteError) {
        let file = try SharedDescriptor.open(path)
        let ready = state.withLock { state -> [Waiter] in
            state.file = file
            state.mirrored = nil
            state.fetching = true
            state.ranges = ranges
            state.parts = PartQueue(pending: pending)
            for waiter in state.waiters.values { state.parts.prioritize(waiter.range) }
            return takeSatisfied(&state)
        }
        for waiter in ready { waiter.handler(.available(file)) }
    }

    /// Serves readers from another process's partial download of the node (it holds the node's download
    /// lock), as far as `ranges` (what its index row records) go; nothing is fetched for them here. Left
    /// alone once this node fetches itself.
    func mirror(path: String, ranges: [Range<UInt64>]) {
        guard let sameFile = state.withLock({ $0.fetching ? nil : $0.mirrored == path }) else { return }
        var opened: SharedDescriptor?
        if !sameFile {
            guard let file = try? SharedDescriptor.open(path) else { return }  // gone meanwhile: the next look sees why
            opened = file
        }
        let (ready, file) = state.withLock { state -> ([Waiter], SharedDescriptor?) in
            guard !state.fetching, state.running != nil else { return ([], nil) }
            if let opened {
                // Another file (a first look, or the other process started over): only its ranges count.
                state.file = opened
                state.mirrored = path
                state.ranges = []
            }
            guard state.mirrored == path else { return ([], nil) }
            for range in ranges { state.ranges = PartialDownload.merge(state.ranges, range) }
            return (takeSatisfied(&state), state.file)
        }
        if let file { for waiter in ready { waiter.handler(.available(file)) } }
    }

    /// Notes bytes written to the partial file and answers the readers waiting for them.
    func received(_ range: Range<UInt64>) {
        let (ready, file) = state.withLock { state -> ([Waiter], SharedDescriptor?) in
            state.ranges = PartialDownload.merge(state.ranges, range)
            return (takeSatisfied(&state), state.file)
        }
        if let file { for waiter in ready { waiter.handler(.available(file)) } }
    }

    /// The next part for a worker: those readers wait for first, then in file order.
    func nextPart() -> Range<UInt64>? {
        state.withLock { $0.parts.next() }
    }

    /// For the one extra worker that serves only readers: the next urgent part, waiting for one; nil once the
    /// queue is closed. Cancelling the waiting task closes the queue (the transfer is stopping).
    func nextUrgentPart() async -> Range<UInt64>? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Range<UInt64>?, Never>) in
                let answer = state.withLock { state -> Range<UInt64>?? in
                    if let part = state.parts.nextUrgent() { return .some(part) }
                    if state.parts.isClosed { return .some(nil) }
                    state.urgentWorker = continuation
                    return .none
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            closeQueue()
        }
    }

    /// No more parts are handed out (the workers are done, or the transfer is failing).
    func closeQueue() {
        let worker = state.withLock { state -> CheckedContinuation<Range<UInt64>?, Never>? in
            state.parts.close()
            defer { state.urgentWorker = nil }
            return state.urgentWorker
        }
        worker?.resume(returning: nil)
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

/// The nodes whose data a transfer fetches or a reader waits for, by ID: one `RemoteNode` each, forgotten
/// once idle.
final class RemoteNodes: Sendable {
    private let table = Locked<[NodeID: RemoteNode]>([:])

    /// Runs `body` with the node's owner, made if nobody has it now; the node stays in the table meanwhile.
    func using<Result>(_ nodeID: NodeID, of downloads: DownloadManager, _ body: (RemoteNode) throws -> Result) rethrows -> Result {
        let node = table.withLock { table -> RemoteNode in
            let node = table[nodeID] ?? RemoteNode(nodeID, downloads: downloads)
            table[nodeID] = node
            node.enter()
            return node
        }
        defer {
            node.leave()
            removeIfIdle(node)
        }
        return try body(node)
    }

    /// The node's owner if anything runs or waits for it now.
    func existing(_ nodeID: NodeID) -> RemoteNode? {
        table.withLock { $0[nodeID] }
    }

    /// Forgets `node` if it is idle and still the one registered.
    func removeIfIdle(_ node: RemoteNode) {
        table.withLock { table in
            if table[node.nodeID] === node, node.isIdle { table[node.nodeID] = nil }
        }
    }

    var count: Int { table.withLock { $0.count } }
}
