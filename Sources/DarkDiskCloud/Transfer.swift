import DarkDiskSync
import Foundation

/// What the transfer table reads of a transfer of any value type, for `DownloadManager.transfersInFlight`.
protocol ListedTransfer: AnyObject, Sendable {
    /// The latest progress, when it started, and how many tickets wait for it.
    var listing: (progress: DownloadProgress, started: Date, requests: Int) { get }
}

/// One transfer shared by the tickets that asked for it: it fans progress and the result out to them, and
/// is cancelled when its last ticket is.
final class Transfer<Value: Sendable>: ListedTransfer {
    private struct State {
        var progress = DownloadProgress(completedBytes: 0, totalBytes: 0, resumedBytes: 0, throughput: 0)
        var tickets: [ObjectIdentifier: DownloadTicket<Value>] = [:]
        var task: Task<Void, Never>?
        var closed = false
        /// Set once the transfer decided whether to cache its result; nil while undecided.
        var caching: Bool?
        /// Whether any ticket, even one cancelled since, asked for caching: a transfer that finishes after
        /// its readers left (a `cat` that closed right after its last byte) still keeps what it fetched.
        var cachingWanted = false
        /// Whether any ticket asked for a persistent file (node data).
        var persistenceWanted = false
    }

    private let state = Locked(State())
    let started = Date()
    private let onClose: @Sendable (Transfer<Value>) -> Void

    /// `onClose` runs once when the transfer stops accepting tickets (finished or abandoned).
    init(onClose: @escaping @Sendable (Transfer<Value>) -> Void) {
        self.onClose = onClose
    }

    /// Adds a ticket; false if the transfer already finished or was abandoned (start a new one).
    func attach(_ ticket: DownloadTicket<Value>) -> Bool {
        let attached = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            // Too late to honour a request for caching: it starts a transfer of its own.
            if state.caching == false && ticket.options.cacheToDiskManager { return false }
            if state.caching != nil && ticket.options.storePersistently && !state.persistenceWanted { return false }
            state.tickets[ObjectIdentifier(ticket)] = ticket
            if ticket.options.cacheToDiskManager { state.cachingWanted = true }
            if ticket.options.storePersistently { state.persistenceWanted = true }
            return true
        }
        if attached {
            ticket.setDetach { [weak self, weak ticket] in
                guard let self, let ticket else { return }
                self.detach(ticket)
            }
        }
        return attached
    }

    /// Decides, once, whether the result is cached by the DiskManager: yes if any ticket wanted it. A ticket
    /// wanting a cached result that arrives after a "no" is not attached.
    func decideCaching() -> Bool {
        state.withLock { state in
            if let decided = state.caching { return decided }
            state.caching = state.cachingWanted
            return state.cachingWanted
        }
    }

    /// Whether any ticket asked for a persistent file; fixed once caching is decided.
    var persistenceWanted: Bool {
        state.withLock { $0.persistenceWanted }
    }

    func start(_ body: @escaping @Sendable () async throws -> Value) {
        let task = Task {
            let result: Result<Value, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            self.finish(result)
        }
        let abandoned = state.withLock { state -> Bool in
            state.task = task
            return state.closed && state.tickets.isEmpty
        }
        if abandoned { task.cancel() }
    }

    func report(_ progress: DownloadProgress) {
        let tickets = state.withLock { state in
            // Parts report from several threads: the listing never goes back either.
            if progress.completedBytes >= state.progress.completedBytes { state.progress = progress }
            return Array(state.tickets.values)
        }
        for ticket in tickets { ticket.update(progress) }
    }

    var listing: (progress: DownloadProgress, started: Date, requests: Int) {
        state.withLock { ($0.progress, started, $0.tickets.count) }
    }

    private func detach(_ ticket: DownloadTicket<Value>) {
        let abandoned = state.withLock { state -> (Bool, Task<Void, Never>?) in
            state.tickets[ObjectIdentifier(ticket)] = nil
            guard state.tickets.isEmpty, !state.closed else { return (false, nil) }
            state.closed = true
            return (true, state.task)
        }
        if abandoned.0 {
            onClose(self)
            abandoned.1?.cancel()
        }
    }

    private func finish(_ result: Result<Value, any Error>) {
        let (tickets, wasOpen) = state.withLock { state -> ([DownloadTicket<Value>], Bool) in
            let wasOpen = !state.closed
            state.closed = true
            defer { state.tickets = [:] }
            return (Array(state.tickets.values), wasOpen)
        }
        if wasOpen { onClose(self) }
        for ticket in tickets { ticket.resolve(result) }
    }
}
