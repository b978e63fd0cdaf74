import Dispatch
import DarkDiskSync

/// One request for a download (ZeroDark.cloud's ZDCDownloadTicket): its progress, its result, and a way to cancel
/// it. Identical requests share one transfer and every ticket gets the result; cancelling a ticket ends
/// the transfer only when no other ticket for it remains (what was received is kept for a later resume).
public final class DownloadTicket<Value: Sendable>: Sendable {
    /// How the ticket's requester wants the result kept.
    public let options: DownloadOptions

    private struct State {
        var progress = DownloadProgress(completedBytes: 0, totalBytes: 0, resumedBytes: 0, throughput: 0)
        var result: Result<Value, any Error>?
        var waiters: [CheckedContinuation<Value, any Error>] = []
        var observers: [@Sendable (DownloadProgress) -> Void] = []
        /// Each already dispatches to its queue or pool.
        var completions: [@Sendable (Result<Value, any Error>) -> Void] = []
        var detach: (@Sendable () -> Void)?
    }

    private let state = Locked(State())
    /// Where observers are told of progress, one report at a time and in order: parts report from several
    /// threads at once, and an observer must never see the count go back nor run under a lock of ours.
    private let observerQueue = DispatchQueue(label: "darkdisk.download.progress")

    init(options: DownloadOptions) {
        self.options = options
    }

    /// A ticket that is already answered (the file was local).
    init(options: DownloadOptions, result: Result<Value, any Error>) {
        self.options = options
        state.withLock { $0.result = result }
    }

    /// The latest progress of the transfer (bytes, throughput, estimated time remaining).
    public var progress: DownloadProgress { state.withLock { $0.progress } }

    /// Whether the ticket has its result (or was cancelled).
    public var isFinished: Bool { state.withLock { $0.result != nil } }

    /// Whether the ticket has a value (finished, neither failed nor cancelled).
    var hasValue: Bool {
        state.withLock { state in
            if case .success = state.result { return true }
            return false
        }
    }

    /// Calls `observer` with the latest progress at once (if the transfer has reported any), then on every
    /// update until the result, on a serial queue of the ticket's: an observer added after the transfer
    /// began, or ended, still learns how far it got.
    public func onProgress(_ observer: @escaping @Sendable (DownloadProgress) -> Void) {
        // Queued under the lock, as `update` queues: the latest count goes before any later one.
        state.withLock { state in
            if state.result == nil { state.observers.append(observer) }
            let latest = state.progress
            guard latest.totalBytes > 0 || latest.completedBytes > 0 else { return }
            observerQueue.async { observer(latest) }
        }
    }

    /// Calls `completion` once with the result, on `queue` (ZeroDark.cloud's completionQueue and completionBlock).
    public func onCompletion(queue: DispatchQueue = .global(), _ completion: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        whenResolved { result in queue.async { completion(result) } }
    }

    /// Calls `completion` once with the result, as blocking work on `pool`: for a completion that reads
    /// files or decodes (the image manager's).
    package func onCompletion(on pool: BlockingPool, _ completion: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        whenResolved { result in pool.submit { completion(result) } }
    }

    /// Calls `dispatch` with the result once it is known; it must only hand the result on, not act on it.
    func whenResolved(_ dispatch: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        let ready = state.withLock { state -> Result<Value, any Error>? in
            if state.result == nil { state.completions.append(dispatch) }
            return state.result
        }
        if let ready { dispatch(ready) }
    }

    /// The result: waits for the transfer. Cancelling the waiting task cancels this ticket.
    public var value: Value {
        get async throws {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                    let ready = state.withLock { state -> Result<Value, any Error>? in
                        if state.result == nil { state.waiters.append(continuation) }
                        return state.result
                    }
                    if let ready { continuation.resume(with: ready) }
                }
            } onCancel: {
                cancel()
            }
        }
    }

    /// Gives up this request: `value` throws `CancellationError`. The shared transfer stops only when this
    /// was its last ticket.
    public func cancel() {
        let detach = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.result == nil else { return nil }
            defer { state.detach = nil }
            return state.detach
        }
        resolve(.failure(CancellationError()))
        detach?()
    }

    func setDetach(_ detach: @escaping @Sendable () -> Void) {
        state.withLock { $0.detach = detach }
    }

    func update(_ progress: DownloadProgress) {
        // Queued under the lock, so that reports enter the queue in the order their counts were accepted.
        state.withLock { state in
            guard state.result == nil, progress.completedBytes >= state.progress.completedBytes else { return }
            state.progress = progress
            guard !state.observers.isEmpty else { return }
            let observers = state.observers
            observerQueue.async { for observer in observers { observer(progress) } }
        }
    }

    /// Delivers the result to every waiter; later calls are ignored (a cancelled ticket stays cancelled).
    func resolve(_ result: Result<Value, any Error>) {
        let (waiters, completions) = state.withLock { state in
            guard state.result == nil else { return ([CheckedContinuation<Value, any Error>](), [@Sendable (Result<Value, any Error>) -> Void]()) }
            state.result = result
            state.detach = nil
            state.observers = []
            defer { state.waiters = []; state.completions = [] }
            return (state.waiters, state.completions)
        }
        // After the progress reports queued before it: an observer has seen the last count by the time a
        // waiter or a completion has the result.
        guard !waiters.isEmpty || !completions.isEmpty else { return }
        observerQueue.async {
            for waiter in waiters { waiter.resume(with: result) }
            for dispatch in completions { dispatch(result) }
        }
    }
}
