import DarkDiskStore
import DarkDiskCrypto
import Foundation
import DarkDiskSync

/// Downloads node data, node meta (header, metadata, thumbnail) and user avatars from the remote (ZeroDark.cloud's
/// ZDCDownloadManager).
///
/// Every call returns a `DownloadTicket` at once, with progress and an async result. Identical requests share
/// one transfer. Node data is fetched in parts (`partSize`, `parallelParts` in flight) with `If-Match` on
/// its ETag, streamed to a partial file and recorded in the index every `checkpointBytes`, so a transfer
/// interrupted by a crash, a restart or a lost connection resumes with the bytes it has; an ETag change
/// restarts from zero. Only authenticated files are delivered or enter the store.
public final class DownloadManager: Sendable {
    public let manager: DiskManager
    public let remote: any Remote
    public let partSize: UInt64
    public let parallelParts: Int
    public let checkpointBytes: UInt64
    let transfers = TransferTable()
    /// The owners of the nodes whose data downloads or is waited for (see `RemoteNode`).
    let nodes = RemoteNodes()

    public init(manager: DiskManager, remote: any Remote, partSize: UInt64 = 8 << 20, parallelParts: Int = 4,
                checkpointBytes: UInt64 = 1 << 20) {
        self.manager = manager
        self.remote = remote
        self.partSize = max(64 << 10, partSize)
        self.parallelParts = max(1, parallelParts)
        self.checkpointBytes = max(64 << 10, checkpointBytes)
        TemporaryDownload.sweep(manager.location.temporaryDownloads)
    }

    /// Transfers running now, in this instance.
    public var activeTransfers: Int { transfers.count }

    /// The transfers running now in this instance, oldest first, each with its progress (bytes, throughput,
    /// time remaining): ZeroDark.cloud's progress manager. `TransferBoard` shows them to other processes.
    public var transfersInFlight: [TransferStatus] { transfers.statuses }

    /// A folder of the cache directory (`partial` for partial downloads and their locks, `downloads` for
    /// downloads the DiskManager does not keep), created if the cache folder was purged.
    func downloadLockPath(_ nodeID: NodeID) throws(RemoteError) -> String {
        do { return try manager.files.downloadLockPath(nodeID) } catch { throw RemoteError(.io, error.message) }
    }

    func cacheFolder(_ name: String) throws(RemoteError) -> String {
        do {
            return try manager.files.cacheSubfolder(name)
        } catch {
            throw RemoteError(.io, error.message)
        }
    }

    /// The node's data, from the store if it is local, else downloaded into the cache pool. Concurrent calls
    /// share one transfer; `progress` is called as bytes arrive. Cancelling the calling task cancels this
    /// request (the transfer goes on while other requests wait for it).
    public func nodeData(_ nodeID: NodeID, progress: (@Sendable (DownloadProgress) -> Void)? = nil) async throws -> DiskExport {
        let ticket = downloadNodeData(nodeID, options: DownloadOptions(cacheToDiskManager: true))
        if let progress { ticket.onProgress(progress) }
        guard let export = try await ticket.value.export else {
            throw RemoteError(.io, "the download of node '\(nodeID)' was not cached")
        }
        return export
    }

    /// Bytes of node `nodeID`'s cloud file a running download in this process has on disk, as its readers
    /// see them (the index's record of a partial download trails them by up to a checkpoint); nil when no
    /// download of it runs here.
    public func receivedBytes(ofRunningDownload nodeID: NodeID) -> UInt64? {
        nodes.existing(nodeID)?.receivedBytes
    }

    /// Runs blocking work of a transfer (index transactions, lock files, authentication of a whole file, an
    /// import into the store) on the blocking pool, so transfers never hold Swift's cooperative threads.
    func blocking<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await BlockingPool.shared.run(body)
    }

    /// A ticket for an answer that needs no transfer.
    func answered<Value: Sendable>(_ options: DownloadOptions, _ body: () throws -> Value?) -> DownloadTicket<Value>? {
        do {
            guard let value = try body() else { return nil }
            return DownloadTicket(options: options, result: .success(value))
        } catch {
            return DownloadTicket(options: options, result: .failure(error))
        }
    }
}
