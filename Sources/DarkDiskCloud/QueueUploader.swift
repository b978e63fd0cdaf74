import DarkDisk
import DarkDiskSync
import Foundation
import Logging

/// Drains the store's upload queue in the background (the mount daemon's half of uploading): it looks at the
/// queue every `checkInterval` seconds (one index read), uploads what it can claim once it has rested
/// `writeBack` seconds (rclone's `--vfs-write-back`: a change made again meanwhile waits again), and pulls
/// right after its own uploads so the outline shows what the remote now holds. A failing round is logged
/// once and retried with backoff (doubling up to a minute) until an upload succeeds again.
///
/// The rest is the drive's, not only each file's: while any change is younger than `writeBack`, nothing
/// uploads, and a drain in progress pauses. A burst of writes across many files (`tar x`, `cp -a`, a
/// `git checkout`) thus uploads after the work instead of beside it, on the same cores and the same index;
/// rclone's rest per file lets the first files of such a burst upload while the rest are still written.
/// A drive written without a pause still uploads once a change has waited `longestHold` seconds. The changes
/// made since the last drain began go first, so an edit made while a backlog uploads waits for one upload,
/// not for the backlog.
public final class QueueUploader: Sendable {
    private let task: Locked<Task<Void, Never>?> = Locked(nil)

    private let wake = AsyncWakeup()

    /// `health`: told whether uploads reach the remote; when it answers again after an outage, the queue drains
    /// at once instead of after its backoff.
    /// `longestHold`: how long a change may wait behind a busy drive (default: twelve times `writeBack`,
    /// a minute for the mount's default of 5 s).
    public init(sync: CloudSync, checkInterval: Double = 1, writeBack: Double = 0, longestHold: Double? = nil,
                pullAfterUploads: Bool = true, health: RemoteHealth? = nil, logger: Logger) {
        let wake = self.wake
        health?.onRecovery { wake.kick() }
        let longestHold = longestHold ?? 12 * writeBack
        let manager = sync.manager
        // Whether the drive is busy: a change younger than `writeBack`, none waiting `longestHold` yet.
        @Sendable func busy() throws -> Bool {
            guard writeBack > 0, let times = try manager.uploadQueueTimes() else { return false }
            return !times.allowUploads(at: manager.clock.now, writeBack: writeBack, longestHold: longestHold)
        }
        let task = Task.detached {
            var backoff = checkInterval
            var failing = false
            // When the last drain began: what was queued since goes first in the next (a drain paused by new
            // changes comes back to a backlog with the new changes behind it).
            var lastDrain: Date?
            while !Task.isCancelled {
                await wake.wait(seconds: backoff)
                if wake.takeKick() { backoff = checkInterval }
                if Task.isCancelled { break }
                do {
                    // Including changes whose uploader died (a daemon killed mid-upload and started again).
                    let rested = sync.manager.clock.now.addingTimeInterval(-writeBack)
                    guard try !busy(), try sync.manager.hasUploadsToStart(restedSince: rested) else { continue }
                    let started = sync.manager.clock.now
                    defer { lastDrain = started }
                    let result = try await sync.drainQueue(restedSince: rested, firstQueuedAfter: lastDrain, pauseWhen: busy)
                    for conflict in result.conflicts {
                        logger.warning("upload: node \(conflict.originalID) changed in the remote; this store's change is node \(conflict.nodeID), a conflict copy beside it")
                    }
                    if !result.uploaded.isEmpty || !result.conflicts.isEmpty {
                        logger.info("upload: \(result.uploaded.count) uploaded, \(result.conflicts.count) as conflict copies")
                        if pullAfterUploads { _ = try? await sync.pull() }
                    }
                    if !result.uploaded.isEmpty || !result.conflicts.isEmpty { health?.noteSuccess() }
                    if result.unreachable, let first = result.failed.first { health?.noteFailure(RemoteError(.unreachable, first.error)) }
                    if let first = result.failed.first {
                        if !failing { logger.warning("upload failed (retried with backoff): node \(first.nodeID): \(first.error)") }
                        failing = true
                        backoff = min(60, backoff * 2)
                    } else {
                        if failing { logger.notice("upload: the queue drains again") }
                        failing = false
                        backoff = checkInterval
                    }
                } catch {
                    health?.noteFailure(error)
                    if !failing { logger.warning("upload: \(error)") }
                    failing = true
                    backoff = min(60, backoff * 2)
                }
            }
        }
        self.task.withLock { $0 = task }
    }

    /// Stops draining and waits up to `timeout` seconds for the round in progress to end (its upload stops at
    /// its next step), so that another drain does not meet this one's claims; whether it ended.
    @discardableResult
    public func stopAndWait(timeout: Double) -> Bool {
        let running = task.withLock { $0 }
        stop()
        guard let running else { return true }
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            await running.value
            done.signal()
        }
        return done.wait(timeout: .now() + timeout) == .success
    }

    /// Stops draining; an upload in progress stops at its next step and its change stays queued.
    public func stop() {
        task.withLock { $0?.cancel() }
        wake.kick()
    }

    deinit {
        task.withLock { $0?.cancel() }
    }
}
