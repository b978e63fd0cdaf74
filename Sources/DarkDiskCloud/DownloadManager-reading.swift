import DarkDiskStore
import Dispatch
import Foundation
import DarkDiskSync
#if canImport(Glibc)
import Glibc
#endif

extension DownloadManager {
    /// Calls `handler` once bytes `range` of the node's cloud file can be read: at once if the node is stored,
    /// else as soon as its download has written them. The download is joined through `ticket` if it is still
    /// running, else started (cached into the pool); the parts covering `range` are fetched before the rest.
    /// Without the bytes after `timeout`, the answer is `.unreachable` (the download goes on). `handler` runs
    /// once, on `queue`, so a slow handler never holds up the download. Returns the download's ticket (nil
    /// when the node is stored), which a reader keeps to join it next time and cancels when done.
    @discardableResult
    public func whenAvailable(_ nodeID: NodeID, range: Range<UInt64>, ticket: DownloadTicket<NodeDataDownload>? = nil,
                              timeout: Duration? = nil, queue: DispatchQueue = .global(),
                              handler: @escaping @Sendable (Result<NodeDataSource, any Error>) -> Void) -> DownloadTicket<NodeDataDownload>? {
        whenAvailable(nodeID, range: range, ticket: ticket, timeout: timeout, dispatch: { work in queue.async(execute: work) }, handler: handler)
    }

    /// As `whenAvailable(_:range:ticket:timeout:queue:handler:)`, with `handler` run as blocking work on
    /// `pool`: for a handler that reads and decrypts (the mount's replies).
    @discardableResult
    public func whenAvailable(_ nodeID: NodeID, range: Range<UInt64>, ticket: DownloadTicket<NodeDataDownload>? = nil,
                              timeout: Duration? = nil, on pool: BlockingPool,
                              handler: @escaping @Sendable (Result<NodeDataSource, any Error>) -> Void) -> DownloadTicket<NodeDataDownload>? {
        whenAvailable(nodeID, range: range, ticket: ticket, timeout: timeout, dispatch: { work in pool.submit(work) }, handler: handler)
    }

    private func whenAvailable(_ nodeID: NodeID, range: Range<UInt64>, ticket: DownloadTicket<NodeDataDownload>?, timeout: Duration?,
                               dispatch: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
                               handler: @escaping @Sendable (Result<NodeDataSource, any Error>) -> Void) -> DownloadTicket<NodeDataDownload>? {
        let answer = Answer(dispatch: dispatch, handler: handler)
        do {
            if let stored = try manager.nodeFile(nodeID, kind: .data) {
                answer(.success(.stored(stored)))
                return nil
            }
        } catch {
            answer(.failure(error))
            return nil
        }
        // A reader is waiting: a transfer pausing between retries after an outage tries again now, so the
        // first read after the remote is back reaches it.
        RetryWakeup.wakeAll()
        // A finished download is answered from its result (a file too large for the cache pool stays a
        // temporary file its ticket keeps); one that failed or was cancelled is tried again.
        let running = ticket.flatMap { !$0.isFinished || $0.hasValue ? $0 : nil } ?? downloadNodeData(nodeID, options: DownloadOptions(cacheToDiskManager: true))
        @Sendable func answerFromTicket() {
            running.whenResolved { result in
                dispatch {
                    guard !answer.isAnswered else { return }
                    answer(Result { () throws -> NodeDataSource in
                        let download = try result.get()
                        if let export = download.export { return .stored(export) }
                        let fd = open(download.cryptoFile.path, O_RDONLY | O_CLOEXEC)
                        guard fd >= 0 else { throw RemoteError(.io, "cannot open the download of node '\(nodeID)'") }
                        return .downloading(SharedDescriptor(fd))
                    })
                }
            }
        }
        /// Waits on the node's stream now: the running transfer's, or one the next transfer takes up.
        @Sendable func follow() {
            let stream = stream(for: nodeID)
            let waiter = stream.wait(for: range) { event in
                switch event {
                case .available(let descriptor): answer(.success(.downloading(descriptor)))
                case .ended where running.isFinished: answerFromTicket()
                case .ended:
                    // Either the transfer this reader follows (it resolves its tickets right after), or one
                    // that was winding down while the next waited for the node's lock: that one takes up the
                    // node's next stream, which this reader then waits on.
                    dispatch {
                        guard !answer.isAnswered else { return }
                        if let stored = try? self.manager.nodeFile(nodeID, kind: .data) {
                            answer(.success(.stored(stored)))
                        } else {
                            follow()
                        }
                    }
                }
            }
            // Once answered (by a stream, the ticket or the deadline), the waiter goes: left on a stream that
            // no transfer will end, it would keep the finished ticket, and the stored file's retain token.
            if let waiter { answer.addCleanup { _ = stream.cancelWait(waiter) } }
            // A stream no transfer has activated may be one made after the transfer ended its own and before it
            // resolved its tickets: nobody would end it, so the ticket answers (whichever answer comes first).
            if running.isFinished || !stream.isActive { answerFromTicket() }
        }
        follow()
        guard let timeout, !answer.isAnswered else { return running }
        answer.setDeadline(Task {
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            answer(.failure(RemoteError(.unreachable, "node '\(nodeID)': bytes \(range) did not arrive within \(timeout) (is the remote reachable?)")))
        })
        return running
    }
}

/// A handler called at most once, on its queue or pool; the first answer wins and cancels the deadline.
private final class Answer: Sendable {
    private let dispatch: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let handler: Locked<(@Sendable (Result<NodeDataSource, any Error>) -> Void)?>
    private let timer = Locked<Task<Void, Never>?>(nil)
    private let cleanups = Locked<[@Sendable () -> Void]>([])

    init(dispatch: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
         handler: @escaping @Sendable (Result<NodeDataSource, any Error>) -> Void) {
        self.dispatch = dispatch
        self.handler = Locked(handler)
    }

    var isAnswered: Bool { handler.withLock { $0 == nil } }

    /// Sets the task that answers with a timeout; it is cancelled when another answer comes first.
    func setDeadline(_ task: Task<Void, Never>) {
        timer.withLock { $0 = task }
        if isAnswered { task.cancel() }
    }

    /// Adds what to undo once answered (runs at once if the answer came already): one per stream waited on.
    func addCleanup(_ body: @escaping @Sendable () -> Void) {
        cleanups.withLock { $0.append(body) }
        if isAnswered { runCleanups() }
    }

    private func runCleanups() {
        for body in cleanups.withLock({ state in defer { state = [] }; return state }) { body() }
    }

    func callAsFunction(_ result: Result<NodeDataSource, any Error>) {
        guard let handler = handler.withLock({ state -> (@Sendable (Result<NodeDataSource, any Error>) -> Void)? in
            defer { state = nil }
            return state
        }) else { return }
        timer.withLock { $0 }?.cancel()
        runCleanups()
        dispatch { handler(result) }
    }
}
