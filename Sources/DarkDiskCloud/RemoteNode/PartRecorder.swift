import DarkDiskStore
import Foundation
import DarkDiskSync
import DarkDiskSystem
#if canImport(Glibc)
import Glibc
#endif

/// Bookkeeping of a partial download while its parts stream in: every `checkpointBytes` received (across
/// all parts) the partial file is flushed and the received ranges are written to the index, so a crash or
/// `kill -9` loses what arrived since the last checkpoint began (about `checkpointBytes` while the disk keeps
/// up). Also reports progress to tickets, as often.
///
/// A checkpoint (`fdatasync`, an index write that may wait on another process' transaction) runs on the
/// blocking pool, one at a time and outside the lock, never on the task that received the bytes: parts keep
/// streaming while it runs, so on a disk slower than the network the bytes at risk exceed `checkpointBytes`
/// (nothing holds the transfer back for the disk). A checkpoint that fails fails the next `received` and
/// `flush`.
final class PartRecorder: Sendable {
    private struct State {
        var download: PartialDownload
        var unsaved: UInt64 = 0
        /// Bytes received since progress was last reported (every `checkpointBytes`, saved or not yet).
        var unreported: UInt64 = 0
        /// A checkpoint is queued or running; the next one is queued only after it.
        var checkpointing = false
        var failure: RemoteError?
    }

    private let state: Locked<State>
    private let file: OwnedDescriptor
    private let manager: DiskManager
    private let checkpointBytes: UInt64
    private let started = Date()
    private let resumed: UInt64
    private let report: @Sendable (DownloadProgress) -> Void
    private let checkpoints = BlockingLane()

    init(_ download: PartialDownload, file: OwnedDescriptor, manager: DiskManager, checkpointBytes: UInt64,
         report: @escaping @Sendable (DownloadProgress) -> Void) {
        state = Locked(State(download: download))
        self.file = file
        self.manager = manager
        self.checkpointBytes = checkpointBytes
        self.resumed = download.receivedBytes
        self.report = report
        report(progress(download))
    }

    var download: PartialDownload { state.withLock { $0.download } }

    /// Notes bytes written to the partial file; queues a checkpoint when enough have accumulated.
    func received(_ range: Range<UInt64>) throws(RemoteError) {
        let (due, progress) = try state.withLock { (state: inout State) throws(RemoteError) -> (Bool, PartialDownload?) in
            if let failure = state.failure { throw failure }
            state.download.add(range)
            state.unsaved += UInt64(range.count)
            state.unreported += UInt64(range.count)
            var progress: PartialDownload?
            if state.unreported >= checkpointBytes {
                state.unreported = 0
                progress = state.download
            }
            guard state.unsaved >= checkpointBytes, !state.checkpointing else { return (false, progress) }
            state.checkpointing = true
            return (true, progress)
        }
        if due { checkpoints.submit { self.checkpoint() } }
        if let progress { report(self.progress(progress)) }
    }

    /// Flushes and records everything received so far, after any checkpoint already queued.
    func flush() async throws(RemoteError) {
        let saved = try await checkpoints.run { () throws(RemoteError) -> PartialDownload in
            self.checkpoint()
            let (download, failure) = self.state.withLock { ($0.download, $0.failure) }
            if let failure { throw failure }
            return download
        }
        report(progress(saved))
    }

    /// Waits until no checkpoint is queued or running, saving nothing more: before the partial download is
    /// dropped, or its descriptor closed.
    func settle() async {
        await checkpoints.run {}
    }

    /// Saves what has arrived; on the checkpoint lane.
    private func checkpoint() {
        let snapshot = state.withLock { state -> PartialDownload? in
            state.checkpointing = false
            guard state.unsaved > 0, state.failure == nil else { return nil }
            state.unsaved = 0
            return state.download
        }
        guard let snapshot else { return }
        do throws(RemoteError) {
            do { try file.fdatasync() } catch {
                throw RemoteError(.io, "cannot flush the partial download: \(error)")
            }
            do { try manager.files.savePartialDownload(snapshot) } catch {
                throw RemoteError(.io, "cannot record the partial download: \(error.message)")
            }
        } catch {
            state.withLock { $0.failure = error }
        }
    }

    private func progress(_ download: PartialDownload) -> DownloadProgress {
        let elapsed = max(Date().timeIntervalSince(started), 0.001)
        return DownloadProgress(completedBytes: download.receivedBytes, totalBytes: download.size, resumedBytes: resumed,
                                throughput: Double(download.receivedBytes - resumed) / elapsed)
    }
}
