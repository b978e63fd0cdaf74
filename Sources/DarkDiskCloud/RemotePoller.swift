import DarkDisk
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
public final class RemotePoller: Sendable {
    private let task: Locked<Task<Void, Never>?> = Locked(nil)

    /// Starts polling every `interval` seconds (the first round after one interval).
    /// `health`: told whether each round reached the remote.
    public init(sync: CloudSync, interval: Double, gcInterval: Double = 3600, gcGrace: Double = 3600, health: RemoteHealth? = nil, logger: Logger) {
        let task = Task.detached {
            var failing = false
            var lastGC: ContinuousClock.Instant?
            // A refused record stays refused round after round: each is logged when first seen, not every round.
            var refused = Set<String>()
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(Int(interval * 1000)))
                if Task.isCancelled { break }
                do {
                    let result = try await sync.pull()
                    health?.noteSuccess()
                    if failing { logger.notice("pull: the remote answers again") }
                    failing = false
                    let newlyRefused = result.skipped.filter { !refused.contains($0) }
                    if result.added + result.changed + result.deleted > 0 || !newlyRefused.isEmpty {
                        logger.info("pull: \(result.added) new, \(result.changed) changed, \(result.deleted) deleted, \(result.skipped.count) skipped")
                    }
                    for line in newlyRefused { logger.warning("pull skipped: \(line)") }
                    refused = Set(result.skipped)
                    if lastGC.map({ ContinuousClock.now - $0 >= .milliseconds(Int(gcInterval * 1000)) }) ?? true {
                        lastGC = ContinuousClock.now
                        let garbage = try await sync.collectGarbage(grace: gcGrace)
                        if !garbage.deleted.isEmpty {
                            logger.info("gc: deleted \(garbage.deleted.count) unnamed cloud file versions (\(garbage.deletedBytes) bytes)")
                        }
                        if garbage.abortedUploads > 0 { logger.info("gc: aborted \(garbage.abortedUploads) unfinished uploads") }
                        if let failure = garbage.uploadCleanupFailure { logger.warning("gc: unfinished uploads were not cleaned up: \(failure)") }
                    }
                } catch {
                    health?.noteFailure(error)
                    if !failing { logger.warning("pull failed (tried again every \(interval) s): \(error)") }
                    failing = true
                }
            }
        }
        self.task.withLock { $0 = task }
    }

    /// Stops polling (a round in progress finishes its current step).
    public func stop() {
        task.withLock { $0?.cancel() }
    }

    deinit {
        task.withLock { $0?.cancel() }
    }
}
