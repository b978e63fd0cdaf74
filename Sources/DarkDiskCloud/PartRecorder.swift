import DarkDisk
import Foundation
import DarkDiskSync
#if canImport(Glibc)
import Glibc
#endif

/// Bookkeeping of a partial download while its parts stream in: every `checkpointBytes` received (across
/// all parts) the partial file is flushed and the received ranges are written to the index, so a crash or
/// `kill -9` loses less than that per part in flight. Also computes the progress reported to tickets.
final class PartRecorder: Sendable {
    private struct State {
        var download: PartialDownload
        var unsaved: UInt64 = 0
    }

    private let state: Locked<State>
    private let fd: Int32
    private let manager: DiskManager
    private let checkpointBytes: UInt64
    private let started = Date()
    private let resumed: UInt64
    private let report: @Sendable (DownloadProgress) -> Void

    init(_ download: PartialDownload, fd: Int32, manager: DiskManager, checkpointBytes: UInt64,
         report: @escaping @Sendable (DownloadProgress) -> Void) {
        state = Locked(State(download: download))
        self.fd = fd
        self.manager = manager
        self.checkpointBytes = checkpointBytes
        self.resumed = download.receivedBytes
        self.report = report
        report(progress(download))
    }

    var download: PartialDownload { state.withLock { $0.download } }

    /// Notes bytes written to the partial file; checkpoints when enough have accumulated.
    func received(_ range: Range<UInt64>) throws(RemoteError) {
        let saved = try state.withLock { (state: inout State) throws(RemoteError) -> PartialDownload? in
            state.download.add(range)
            state.unsaved += UInt64(range.count)
            guard state.unsaved >= checkpointBytes else { return nil }
            try save(&state)
            return state.download
        }
        if let saved { report(progress(saved)) }
    }

    /// Flushes and records everything received so far.
    func flush() throws(RemoteError) {
        let saved = try state.withLock { (state: inout State) throws(RemoteError) -> PartialDownload in
            if state.unsaved > 0 { try save(&state) }
            return state.download
        }
        report(progress(saved))
    }

    private func save(_ state: inout State) throws(RemoteError) {
        guard fdatasync(fd) == 0 else {
            throw RemoteError(.io, "cannot flush the partial download: \(String(cString: strerror(errno)))")
        }
        do { try manager.savePartialDownload(state.download) } catch {
            throw RemoteError(.io, "cannot record the partial download: \(error.message)")
        }
        state.unsaved = 0
    }

    private func progress(_ download: PartialDownload) -> DownloadProgress {
        let elapsed = max(Date().timeIntervalSince(started), 0.001)
        return DownloadProgress(completedBytes: download.receivedBytes, totalBytes: download.size, resumedBytes: resumed,
                                throughput: Double(download.receivedBytes - resumed) / elapsed)
    }
}
