import DarkDiskStore
import DarkDiskCrypto
import DarkDiskSync
import Dispatch

/// Reads of a node's data while it may still be downloading: the one question a reader asks ("plaintext
/// [o, o+n) of node X") answered from the stored file, or from the partial file as soon as the chunks are
/// there. The node's `RemoteNode` keeps the waits; this maps plaintext to ciphertext and authenticates the
/// header on the way.
extension DownloadManager {
    /// Plaintext `range` of the node's data, readable now: from the stored file, else once the download
    /// (joined through `ticket`, or started into the cache pool) has written the cloud file's header and the
    /// chunks covering `range`, which it fetches before the rest. `key` is the node's content key; `known`, a
    /// reader this caller got before, spares the header's wait when the partial file is still the same. Each
    /// of the two waits gives up after `timeout` with `.unreachable`. Returns the source and the download's
    /// ticket (nil when the node is stored), which the caller keeps to join it next time and cancels when done.
    package func read(_ nodeID: NodeID, key: SymmetricKey, plaintext range: Range<UInt64>,
                     ticket: DownloadTicket<NodeDataDownload>? = nil, timeout: Duration? = nil,
                     known: PartialReader? = nil) async throws -> (source: PlaintextSource, ticket: DownloadTicket<NodeDataDownload>?) {
        let kept = Locked<DownloadTicket<NodeDataDownload>?>(nil)
        let source = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PlaintextSource, any Error>) in
            let started = whenReadable(nodeID, key: key, plaintext: range, ticket: ticket, timeout: timeout, on: .shared, known: known) {
                continuation.resume(with: $0)
            }
            kept.withLock { $0 = started }
        }
        return (source, kept.withLock { $0 })
    }

    /// As `read(_:key:plaintext:ticket:timeout:known:)`, with `handler` called once, as blocking work on
    /// `pool` (the mount's reads decrypt there and reply); returns the ticket at once.
    @discardableResult
    package func whenReadable(_ nodeID: NodeID, key: SymmetricKey, plaintext range: Range<UInt64>,
                             ticket: DownloadTicket<NodeDataDownload>? = nil, timeout: Duration? = nil, on pool: BlockingPool,
                             known: PartialReader? = nil,
                             handler: @escaping @Sendable (Result<PlaintextSource, any Error>) -> Void) -> DownloadTicket<NodeDataDownload>? {
        // The ticket of the first wait, for the second one (it is set before any answer can need it, unless the
        // first answer came at once, from a stored file).
        let running = Locked<DownloadTicket<NodeDataDownload>?>(ticket)
        @Sendable @discardableResult func readChunks(_ partial: PartialReader) -> DownloadTicket<NodeDataDownload>? {
            let reader = partial.reader
            let needed = reader.header.ciphertextRange(section: reader.dataSection, offset: range.lowerBound, count: range.count)
            return whenAvailable(nodeID, range: needed, ticket: running.withLock { $0 }, timeout: timeout, on: pool) { result in
                handler(Result { () throws -> PlaintextSource in
                    switch try result.get() {
                    case .stored(let export): return .stored(export)
                    case .downloading(let descriptor):
                        // Still the partial file whose header was read? Else a restarted download's.
                        if descriptor === partial.descriptor { return .downloading(partial) }
                        return .downloading(try Self.partialReader(descriptor, key: key))
                    }
                })
            }
        }
        if let known { return readChunks(known) }
        let started = whenAvailable(nodeID, range: 0..<UInt64(CryptoFormat.headerSize), ticket: ticket, timeout: timeout, on: pool) { result in
            do {
                switch try result.get() {
                case .stored(let export): handler(.success(.stored(export)))
                case .downloading(let descriptor): readChunks(try Self.partialReader(descriptor, key: key))
                }
            } catch {
                handler(.failure(error))
            }
        }
        running.withLock { $0 = started ?? $0 }
        return started
    }

    /// Calls `handler` once bytes `range` of the node's cloud file can be read: at once if the node is stored,
    /// else as soon as its download has written them. The download is joined through `ticket` if it is still
    /// running, else started (cached into the pool); the parts covering `range` are fetched before the rest.
    /// Without the bytes after `timeout`, the answer is `.unreachable` (the download goes on). `handler` runs
    /// once, on `queue`, so a slow handler never holds up the download. Returns the download's ticket (nil
    /// when the node is stored), which a reader keeps to join it next time and cancels when done.
    @discardableResult
    package func whenAvailable(_ nodeID: NodeID, range: Range<UInt64>, ticket: DownloadTicket<NodeDataDownload>? = nil,
                              timeout: Duration? = nil, queue: DispatchQueue = .global(),
                              handler: @escaping @Sendable (Result<NodeDataSource, any Error>) -> Void) -> DownloadTicket<NodeDataDownload>? {
        whenAvailable(nodeID, range: range, ticket: ticket, timeout: timeout, dispatch: { work in queue.async(execute: work) }, handler: handler)
    }

    /// As `whenAvailable(_:range:ticket:timeout:queue:handler:)`, with `handler` run as blocking work on
    /// `pool`: for a handler that reads and decrypts (the mount's replies).
    @discardableResult
    package func whenAvailable(_ nodeID: NodeID, range: Range<UInt64>, ticket: DownloadTicket<NodeDataDownload>? = nil,
                              timeout: Duration? = nil, on pool: BlockingPool,
                              handler: @escaping @Sendable (Result<NodeDataSource, any Error>) -> Void) -> DownloadTicket<NodeDataDownload>? {
        whenAvailable(nodeID, range: range, ticket: ticket, timeout: timeout, dispatch: { work in pool.submit(work) }, handler: handler)
    }

    private func whenAvailable(_ nodeID: NodeID, range: Range<UInt64>, ticket: DownloadTicket<NodeDataDownload>?, timeout: Duration?,
                               dispatch: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
                               handler: @escaping @Sendable (Result<NodeDataSource, any Error>) -> Void) -> DownloadTicket<NodeDataDownload>? {
        let answer = ReadAnswer(dispatch: dispatch, handler: handler)
        do {
            if let stored = try manager.files.nodeFile(nodeID, kind: .data) {
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
        if let ticket, ticket.isFinished, ticket.hasValue {
            ticket.whenResolved { result in
                dispatch { answer(Result { try Self.source(of: result.get(), nodeID) }) }
            }
            return ticket
        }
        let live = ticket.flatMap { $0.isFinished ? nil : $0 }
        let running = nodes.using(nodeID, of: self) { node -> DownloadTicket<NodeDataDownload> in
            let (waiter, kept) = node.wait(for: range, keeping: live, options: DownloadOptions(cacheToDiskManager: true)) { event in
                switch event {
                case .available(let descriptor): answer(.success(.downloading(descriptor)))
                case .landed(let result): dispatch { answer(Result { try Self.source(of: result.get(), nodeID) }) }
                }
            }
            // Once answered (by the node or the deadline), the waiter goes: left on the node, it would keep
            // the node's owner, and the stored file's retain token.
            if let waiter { answer.addCleanup { node.cancelWait(waiter) } }
            return kept
        }
        guard let timeout, !answer.isAnswered else { return running }
        answer.setDeadline(Task {
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            answer(.failure(RemoteError(.unreachable, "node '\(nodeID)': bytes \(range) did not arrive within \(timeout) (is the remote reachable?)")))
        })
        return running
    }

    /// Where a landed download is read: the stored file, or a descriptor of its temporary file. Blocking.
    private static func source(of download: NodeDataDownload, _ nodeID: NodeID) throws -> NodeDataSource {
        if let export = download.export { return .stored(export) }
        do { return .downloading(try SharedDescriptor.open(download.cryptoFile.path)) } catch {
            throw RemoteError(.io, "cannot open the download of node '\(nodeID)': \(error.message)")
        }
    }

    /// A reader over a partial file whose header has arrived, authenticated with the node's key.
    private static func partialReader(_ descriptor: SharedDescriptor, key: SymmetricKey) throws -> PartialReader {
        PartialReader(reader: try CryptoFileReader(fileDescriptor: descriptor.fileDescriptor, key: key, owner: descriptor),
                      descriptor: descriptor)
    }
}

/// A reader's handler, called at most once, on its queue or pool; the first answer wins, cancels the
/// deadline and runs the cleanups (the waits it leaves).
private final class ReadAnswer: Sendable {
    private let dispatch: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let handler: Locked<Callback<Result<NodeDataSource, any Error>, Void>?>
    private let timer = Locked<Task<Void, Never>?>(nil)
    private let cleanups = Locked<[@Sendable () -> Void]>([])

    init(dispatch: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
         handler: @escaping @Sendable (Result<NodeDataSource, any Error>) -> Void) {
        self.dispatch = dispatch
        self.handler = Locked(Callback(handler))
    }

    var isAnswered: Bool { handler.withLock { $0 == nil } }

    /// Sets the task that answers with a timeout; it is cancelled when another answer comes first.
    func setDeadline(_ task: Task<Void, Never>) {
        timer.withLock { $0 = task }
        if isAnswered { task.cancel() }
    }

    /// Adds what to undo once answered (runs at once if the answer came already).
    func addCleanup(_ body: @escaping @Sendable () -> Void) {
        cleanups.withLock { $0.append(body) }
        if isAnswered { runCleanups() }
    }

    private func runCleanups() {
        for body in cleanups.withLock({ state in defer { state = [] }; return state }) { body() }
    }

    func callAsFunction(_ result: Result<NodeDataSource, any Error>) {
        guard let handler = handler.withLock({ state -> Callback<Result<NodeDataSource, any Error>, Void>? in
            defer { state = nil }
            return state
        }) else { return }
        timer.withLock { $0 }?.cancel()
        runCleanups()
        dispatch { handler.call(result) }
    }
}
