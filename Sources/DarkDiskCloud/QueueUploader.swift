import DarkDiskStore
import DarkDiskSync
import Foundation
import Logging

/// Drains the store's upload queue in the background (the mount daemon's half of uploading): it looks at the
/// queue every `checkInterval` seconds (one index read), uploads what it can claim once it has rested
/// `writeBack` seconds (rclone's `--vfs-write-back`: a change made again meanwhile waits again), and pulls
/// right after its own uploads so the outline shows what the remote now holds. A failing round is logged
/// once and retried with backoff (doubling up to a minute) until an upload succeeds again.
///
/// The rest is the drive's, not only each file's: while any change is younger than `writeBack` (a queued
/// one, or any change of the drive this process made, `DiskManager.lastDriveChange`), nothing uploads, and
/// a drain in progress pauses. A burst of writes across many files (`tar x`, `cp -a`, a
/// `git checkout`) thus uploads after the work instead of beside it, on the same cores and the same index;
/// rclone's rest per file lets the first files of such a burst upload while the rest are still written.
/// A drive written without a pause still uploads once a change has waited `longestHold` seconds. The changes
/// made since the last drain began go first, so an edit made while a backlog uploads waits for one upload,
/// not for the backlog.
package final class QueueUploader: Sendable {
    private let loop: BackgroundLoop

    /// What one round leaves the next.
    private struct Progress {
        /// The rest before the next round: `checkInterval`, doubled after each failing round up to a minute.
        var backoff: Double
        var failing = false
        /// When the last drain began: what was queued since goes first in the next (a drain paused by new
        /// changes comes back to a backlog with the new changes behind it).
        var lastDrain: Date?
    }

    /// `health`: told whether uploads reach the remote; when it answers again after an outage, the queue drains
    /// at once instead of after its backoff.
    /// `longestHold`: how long a change may wait behind a busy drive (default: twelve times `writeBack`,
    /// a minute for the mount's default of 5 s).
    /// `manual`: no round of its own; `runOnce()` runs one (tests).
    package init(sync: CloudSync, checkInterval: Double = 1, writeBack: Double = 0, longestHold: Double? = nil,
                pullAfterUploads: Bool = true, health: RemoteHealth? = nil, logger: Logger, manual: Bool = false) {
        let longestHold = longestHold ?? 12 * writeBack
        let manager = sync.manager
        // Whether the drive is busy: a change younger than `writeBack`, none waiting `longestHold` yet.
        // A change that queued nothing (an `unlink` of a file never uploaded, a folder's time) counts too.
        @Sendable func busy() throws -> Bool {
            guard writeBack > 0, var times = try manager.uploadQueue.times() else { return false }
            if let last = manager.lastDriveChange, last > times.newestChange { times.newestChange = last }
            return !times.allowUploads(at: manager.clock.now, writeBack: writeBack, longestHold: longestHold)
        }
        let progress = Locked(Progress(backoff: checkInterval))
        loop = BackgroundLoop(manual ? .manual : .automatic(firstAfter: .milliseconds(Int(checkInterval * 1000)))) { kicked in
            if kicked { progress.withLock { $0.backoff = checkInterval } }
            await Self.round(sync: sync, checkInterval: checkInterval, writeBack: writeBack, busy: busy, pullAfterUploads: pullAfterUploads, health: health,
                             logger: logger, progress: progress)
            return .rest(.milliseconds(Int(progress.withLock { $0.backoff } * 1000)))
        }
        health?.onRecovery { [loop] in loop.kick() }
    }

    /// One look at the queue, and a drain of what rested.
    private static func round(sync: CloudSync, checkInterval: Double, writeBack: Double, busy: @escaping @Sendable () throws -> Bool, pullAfterUploads: Bool,
                              health: RemoteHealth?, logger: Logger, progress: Locked<Progress>) async {
        let checkFailing = { progress.withLock { $0.failing } }
        do {
            // Including changes whose uploader died (a daemon killed mid-upload and started again).
            let rested = sync.manager.clock.now.addingTimeInterval(-writeBack)
            guard try !busy(), try await sync.manager.uploadQueue.hasChangesToStart(restedSince: rested) else { return }
            let started = sync.manager.clock.now
            defer { progress.withLock { $0.lastDrain = started } }
            let result = try await sync.drainQueue(restedSince: rested, firstQueuedAfter: progress.withLock { $0.lastDrain }, pauseWhen: busy)
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
                if !checkFailing() { logger.warning("upload failed (retried with backoff): node \(first.nodeID): \(first.error)") }
                progress.withLock { $0.failing = true; $0.backoff = min(60, $0.backoff * 2) }
            } else {
                if checkFailing() { logger.notice("upload: the queue drains again") }
                progress.withLock { $0.failing = false; $0.backoff = checkInterval }
            }
        } catch {
            health?.noteFailure(error)
            if !checkFailing() { logger.warning("upload: \(error)") }
            progress.withLock { $0.failing = true; $0.backoff = min(60, $0.backoff * 2) }
        }
    }

    /// Runs one round now (a `manual` uploader's only way to upload): a look at the queue and a drain.
    package func runOnce() async { await loop.runOnce() }

    /// Stops draining and waits up to `timeout` seconds for the round in progress to end (its upload stops at
    /// its next step), so that another drain does not meet this one's claims; whether it ended.
    @discardableResult
    package func stopAndWait(timeout: Double) -> Bool { loop.stopAndWait(timeout: timeout) }

    /// Stops draining; an upload in progress stops at its next step and its change stays queued.
    package func stop() { loop.stop() }
}
