
import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskDrive
import DarkDiskSync
import Synchronization

/// One open file handle of the mount. A stored file is served from its retained export (its token keeps
/// the file on disk until `release`) through a random-access reader; a node that is only in the remote is
/// served from its download while it runs, and from the stored file once the download has landed; a drive
/// file open for writing, from its staged content.
final class OpenFile: Sendable {
    let entry: FSEntry
    /// The inode opened. Under `/nodes` an inode serves one version of the entry, which this handle keeps
    /// reading to its close; a drive file's inode serves every version of its node (`refreshDriveHandle`).
    let ino: Inode
    private let state: Locked<Source>
    /// Whether the node got a new version since this drive handle's source was chosen (an atomic, not a
    /// lock: every read of a drive file looks at it).
    private let stale = Atomic<Bool>(false)

    enum Source: Sendable {
        case stored(DiskExport, CryptoFileReader)
        case remote(RemoteData)
        /// A drive file's content being written (every handle of it open for writing shares it).
        case drive(DriveWriter)
    }

    init(entry: FSEntry, ino: Inode, source: Source) {
        self.entry = entry
        self.ino = ino
        self.state = Locked(source)
    }

    var source: Source { state.withLock { $0 } }

    /// Switches to the stored file (its download landed); the returned reader serves from now on. The
    /// first export adopted stays until the handle is released: several reads in flight each bring one,
    /// and replacing it would release its token and close the descriptor a read is still using (the number
    /// then goes to another file, and that read fails authentication).
    ///
    /// The stored file must be the version this handle was opened on (the cloud file it has read from, at the
    /// size the kernel was given): a node replaced meanwhile is read by new opens, never by this handle.
    func adopt(_ export: DiskExport) throws -> CryptoFileReader {
        if case .stored(_, let reader) = source { return reader }
        let reader = try export.reader()
        if case .remote(let remote) = source { try remote.check(reader, from: export.cryptoFile.path) }
        let (previous, kept) = state.withLock { state -> (Source, CryptoFileReader) in
            if case .stored(_, let existing) = state { return (state, existing) }
            defer { state = .stored(export, reader) }
            return (state, reader)
        }
        if case .remote(let remote) = previous { remote.finish() }
        return kept
    }

    /// A drive file's node got a new version (committed here, pulled, imported by another process): the
    /// next read chooses its source again.
    func markStale() {
        stale.store(true, ordering: .releasing)
    }

    /// Whether the node changed since the source was chosen (and forgets it).
    func takeStale() -> Bool {
        stale.load(ordering: .acquiring) && stale.exchange(false, ordering: .acquiringAndReleasing)
    }

    /// Serves `source` from now on. A read in flight keeps the source it took (its reader holds its export,
    /// and with it the descriptor); a download this handle kept going stops unless others wait for it.
    func rebind(_ source: Source) {
        let previous = state.withLock { state in defer { state = source }; return state }
        if case .remote(let remote) = previous { remote.cancel() }
    }

    /// Lets go of the download this handle kept going (it goes on only if other readers wait for it).
    func close() {
        if case .remote(let remote) = source { remote.cancel() }
    }
}

/// The data of a node that is not stored, open for reading: its key and size from the outline, the download
/// ticket that keeps the transfer going while the file is open, and (once the cloud file's header has
/// arrived) a reader over the download's partial file.
final class RemoteData: Sendable {
    let nodeID: NodeID
    let key: SymmetricKey
    /// The plaintext size the outline gives.
    let size: UInt64
    private let state: Locked<State>

    private struct State {
        var ticket: DownloadTicket<NodeDataDownload>?
        var partial: PartialReader?
        /// The ID of the cloud file this handle has served bytes of: it serves no other.
        var fileID: [UInt8]?
        /// When a read of this handle last gave up waiting for the remote.
        var gaveUp: ContinuousClock.Instant?
    }

    init(nodeID: NodeID, key: SymmetricKey, size: UInt64, ticket: DownloadTicket<NodeDataDownload>) {
        self.nodeID = nodeID
        self.key = key
        self.size = size
        self.state = Locked(State(ticket: ticket))
    }

    var ticket: DownloadTicket<NodeDataDownload>? { state.withLock { $0.ticket } }
    /// The reader over the partial file this handle last read, once the header has arrived.
    var partial: PartialReader? { state.withLock { $0.partial } }

    func keep(_ ticket: DownloadTicket<NodeDataDownload>?) {
        guard let ticket else { return }
        state.withLock { $0.ticket = ticket }
    }

    /// The reader of a partial file the download layer answered with, checked once per partial file: a
    /// download restarted for a new version of the node writes another one, which this handle refuses
    /// (`check`). A read in flight over the previous partial file keeps its own reader (and descriptor).
    func use(_ partial: PartialReader) throws -> CryptoFileReader {
        if let current = state.withLock({ $0.partial }), current.isSameFile(as: partial) { return current.reader }
        try check(partial.reader, from: "the download of node \(nodeID)")
        let previous = state.withLock { state -> PartialReader? in
            defer { state.partial = partial }
            return state.partial
        }
        withExtendedLifetime(previous) {}  // released after the lock
        return partial.reader
    }

    /// Refuses a file that is not the version this handle serves: another data size than the one the
    /// kernel was given (a record whose size lies about its cloud file), or another cloud file than the one
    /// it has read from (the node changed in the remote while open).
    func check(_ reader: CryptoFileReader, from source: String) throws(DarkDiskError) {
        let actual = reader.plaintextSize(ofSection: reader.dataSection)
        guard actual == size else {
            throw DarkDiskError(.corrupt, "\(source) holds \(actual) bytes of data but the node's record gives \(size) (a record altered on the remote, or the node changed while open); nothing of it is served")
        }
        let fileID = reader.header.fileID
        let served = state.withLock { state -> [UInt8] in
            if state.fileID == nil { state.fileID = fileID }
            return state.fileID!
        }
        guard served == fileID else {
            throw DarkDiskError(.corrupt, "node \(nodeID) changed in the remote while open: this handle keeps to the version it began reading (reopen for the new one)")
        }
    }

    /// How long a read of this handle may wait for bytes: `timeout`, unless a read of the handle gave up less
    /// than `timeout` ago. A `cat` is one handle, and the kernel retries a failed page and splits readahead
    /// into several requests: each waited the whole timeout, so a 30 s timeout failed a `cat` after 79 s.
    func waitLimit(_ timeout: Duration) -> Duration {
        guard let gaveUp = state.withLock({ $0.gaveUp }), ContinuousClock.now < gaveUp + timeout else { return timeout }
        return .zero
    }

    /// A read of this handle gave up waiting for the remote.
    func gaveUpWaiting() {
        state.withLock { $0.gaveUp = .now }
    }

    /// The download landed: keep nothing of it.
    func finish() {
        state.withLock { $0.ticket = nil }
    }

    func cancel() {
        state.withLock { state -> DownloadTicket<NodeDataDownload>? in
            defer { state.ticket = nil }
            return state.ticket
        }?.cancel()
    }
}
