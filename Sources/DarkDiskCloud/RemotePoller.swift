import DarkDiskStore
import DarkDiskSync
import Foundation
import Logging

/// Pulls the remote's outline on a timer (the mount daemon's `--poll-interval`), so that what another
/// machine pushes appears on the mount without a command. Each round is `CloudSync.pull`; a change is
/// logged in one line, an outage once (not every round) until a pull succeeds again, and a refused record
/// once for as long as the bucket keeps it refused. A remote that lists
/// no node while the store knows some is refused by the pull, as from the command line. Every
/// `gcInterval` seconds a round also runs `collectGarbage(grace:)` (as `darkdisk gc` does), so cloud file
/// versions no record names go without a command.
package final class RemotePoller: Sendable {
    private let loop: BackgroundLoop

    /// What one round leaves the next.
    private struct Progress {
        var failing = false
        var lastGC: ContinuousClock.Instant?
        /// A refused record stays refused round after round: each is logged when first seen, not every round.
        var refused = Set<String>()
    }

    /// Starts polling every `interval` seconds (the first round after one interval; `manual`: only when
    /// `runOnce()` is called).
    /// `health`: told whether each round reached the remote.
    package init(sync: CloudSync, interval: Double, gcInterval: Double = 3600, gcGrace: Double = 3600, health: RemoteHealth? = nil,
                logger: Logger, manual: Bool = false) {
        let rest = Duration.milliseconds(Int(interval * 1000))
        let progress = Locked(Progress())
        loop = BackgroundLoop(manual ? .manual : .automatic(firstAfter: rest)) { _ in
            do {
                let result = try await sync.pull()
                health?.noteSuccess()
                let (wasFailing, newlyRefused, gcDue) = progress.withLock { progress in
                    defer { progress.failing = false; progress.refused = Set(result.skipped) }
                    let due = progress.lastGC.map { ContinuousClock.now - $0 >= .milliseconds(Int(gcInterval * 1000)) } ?? true
                    if due { progress.lastGC = ContinuousClock.now }
                    return (progress.failing, result.skipped.filter { !progress.refused.contains($0) }, due)
                }
                if wasFailing { logger.notice("pull: the remote answers again") }
                if result.added + result.changed + result.deleted > 0 || !newlyRefused.isEmpty {
                    logger.info("pull: \(result.added) new, \(result.changed) changed, \(result.deleted) deleted, \(result.skipped.count) skipped")
                }
                for line in newlyRefused { logger.warning("pull skipped: \(line)") }
                if gcDue {
                    let garbage = try await sync.collectGarbage(grace: gcGrace)
                    if !garbage.deleted.isEmpty {
                        logger.info("gc: deleted \(garbage.deleted.count) unnamed cloud file versions (\(garbage.deletedBytes) bytes)")
                    }
                    if garbage.abortedUploads > 0 { logger.info("gc: aborted \(garbage.abortedUploads) unfinished uploads") }
                    if let failure = garbage.uploadCleanupFailure { logger.warning("gc: unfinished uploads were not cleaned up: \(failure)") }
                }
            } catch {
                health?.noteFailure(error)
                if !progress.withLock({ progress in defer { progress.failing = true }; return progress.failing }) {
                    logger.warning("pull failed (tried again every \(interval) s): \(error)")
                }
            }
            return .rest(rest)
        }
    }

    /// Runs one round now (a `manual` poller's only way to pull).
    package func runOnce() async { await loop.runOnce() }

    /// Stops polling (a round in progress finishes its current step).
    package func stop() { loop.stop() }
}
