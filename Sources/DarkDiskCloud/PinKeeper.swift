import DarkDiskStore
import DarkDiskSync
import Foundation
import Logging

/// Keeps pinned files on this device (the mount daemon's half of pinning): it downloads the data of every
/// pinned node that is not stored here (persistent, in the background, a few at a time), makes a pinned node
/// already in the cache pool persistent, and does it again when the remote copy of a pinned node changes
/// (the pull drops the old version) or a file arrives in a pinned folder. It looks at the store every
/// `interval` seconds, at once when `kick()`ed, and on start, so pins set while no mount ran and
/// downloads cut by a crash resume. A failing download is tried again with backoff (doubling up to a
/// minute) and logged once until it succeeds.
package final class PinKeeper: Sendable {
    private let manager: DiskManager
    private let downloads: DownloadManager
    private let logger: Logger
    private let concurrency: Int
    private let health: RemoteHealth?
    private let loop = Locked<BackgroundLoop?>(nil)
    private struct State {
        /// Nodes downloading now.
        var inFlight: Set<NodeID> = []
        /// Nodes whose last download failed: when to try again, and the wait after that.
        var retry: [NodeID: RetryBackoff] = [:]
    }
    private let state = Locked(State())

    /// `health`: while the remote is down nothing is started; when it answers again, every pinned download
    /// starts at once (their backoff forgotten).
    package init(manager: DiskManager, downloads: DownloadManager, interval: Double = 1, concurrency: Int = 2,
                health: RemoteHealth? = nil, logger: Logger, manual: Bool = false) {
        self.manager = manager
        self.downloads = downloads
        self.logger = logger
        self.health = health
        self.concurrency = max(1, concurrency)
        // What one look leaves the next: the pin clock and the newest change it saw, and the backoff of a
        // look that failed (a full disk, say), taken again after it: 2 s, doubling up to a minute.
        let seen = Locked<(clock: Int64, change: Int64, failed: RetryBackoff?)>((-1, -1, nil))
        let loop = BackgroundLoop(manual ? .manual : .automatic(firstAfter: .zero)) { [weak self] kicked in
            guard let self else { return .stop }
            do {
                // Something may need doing when a pin changed, the outline or a stored file changed, a
                // download ended (which kicks) or a failed one is due again; else the store is left alone.
                // (Index reads and writes: on the blocking pool, never on a thread of the cooperative one.)
                let (clock, change) = try await BlockingPool.shared.run { () throws(DarkDiskError) in
                    (try manager.outline.pinClock(), try manager.newestEntryChange())
                }
                let last = seen.withLock { $0 }
                let changed = clock != last.clock || change != last.change || kicked || self.retryDue()
                if let failed = last.failed, !failed.isDue(at: manager.clock.now) {
                    // Waiting out the failed look's backoff.
                } else if changed || last.failed != nil {
                    try await BlockingPool.shared.run { () throws(DarkDiskError) in try self.keepPinned() }
                    // Only a look that went through counts.
                    seen.withLock { $0 = (clock, change, nil) }
                    if last.failed != nil { logger.notice("pins: looking at the pins works again") }
                }
            } catch {
                let now = manager.clock.now
                let first = seen.withLock { seen in
                    defer { seen.failed = RetryBackoff.after(seen.failed, first: 2, now: now) }
                    return seen.failed == nil
                }
                if first { logger.error("pins: \(error) (tried again with backoff)") }
            }
            return .rest(.milliseconds(Int(interval * 1000)))
        }
        self.loop.withLock { $0 = loop }
        health?.onRecovery { [weak self] in
            self?.state.withLock { $0.retry = [:] }
            self?.kick()
        }
    }

    /// Whether a failed download waits for nothing but its backoff (the look after its failure found it
    /// not yet due, and nothing else may change) and could start now. A download that ends, and the remote
    /// answering again, kick the keeper anyway.
    private func retryDue() -> Bool {
        guard health?.isOffline != true else { return false }
        let now = manager.clock.now
        return state.withLock { state in
            state.inFlight.count < concurrency
                && state.retry.contains { node, retry in retry.isDue(at: now) && !state.inFlight.contains(node) }
        }
    }

    /// Looks at the pins now (a pin was just set through the mount).
    package func kick() { loop.withLock { $0 }?.kick() }

    /// Looks at the pins now, on the caller's task (a `manual` keeper's only way to look).
    package func runOnce() async { await loop.withLock { $0 }?.runOnce() }

    package func stop() { loop.withLock { $0 }?.stop() }

    deinit { loop.withLock { $0 }?.stop() }

    /// One look: every pinned node that is not kept persistently gets what it needs, and so does every
    /// download a command handed over (`fetch --background`).
    private func keepPinned() throws(DarkDiskError) {
        let nodes = try manager.outline.pinnedNodesToKeep()
        var missing = nodes.filter { !$0.stored }
        for wanted in try manager.outline.wantedDownloads() {
            let stored = try manager.files.storedFile(wanted.nodeID, kind: .data)
            if let stored, !wanted.persistent || stored.mode == .persistent {
                try manager.outline.forgetWantedDownload(wanted.nodeID)
            } else if !missing.contains(where: { $0.nodeID == wanted.nodeID }) {
                missing.append(StoreOutline.PinnedNode(nodeID: wanted.nodeID, stored: false, size: 0, persistent: wanted.persistent))
            }
        }
        state.withLock {
            // A pin that went away takes its retry with it.
            let wanted = Set(missing.map(\.nodeID))
            $0.retry = $0.retry.filter { wanted.contains($0.key) }
        }
        var firstError: DarkDiskError?
        for node in nodes where node.stored {
            // One file that cannot be made persistent (a full disk) holds up neither the others nor the downloads.
            do { try manager.files.makeNodeFilePersistent(true, nodeID: node.nodeID, kind: .data) } catch { firstError = firstError ?? error }
        }
        let now = manager.clock.now
        if health?.isOffline != true {
            for node in missing {
                let start = state.withLock { state -> Bool in
                    guard state.inFlight.count < concurrency, !state.inFlight.contains(node.nodeID) else { return false }
                    if let retry = state.retry[node.nodeID], !retry.isDue(at: now) { return false }
                    state.inFlight.insert(node.nodeID)
                    return true
                }
                if start { download(node) }
            }
        }
        if let firstError { throw firstError }
    }

    private func download(_ node: StoreOutline.PinnedNode) {
        let ticket = downloads.downloadNodeData(node.nodeID, options: DownloadOptions(cacheToDiskManager: true, storePersistently: node.persistent))
        ticket.onCompletion { [self] result in
            let failure: String? = switch result {
            case .success: nil
            case .failure(let error): "\(error)"
            }
            let now = manager.clock.now
            let firstFailure = state.withLock { state -> Bool in
                state.inFlight.remove(node.nodeID)
                guard failure != nil else {
                    state.retry[node.nodeID] = nil
                    return false
                }
                let first = state.retry[node.nodeID] == nil
                state.retry[node.nodeID] = RetryBackoff.after(state.retry[node.nodeID], first: 5, now: now)
                return first
            }
            if case .failure(let error) = result { health?.noteFailure(error) } else { health?.noteSuccess() }
            // A handed download is done (a pinned node has no request; forgetting none is harmless).
            if failure == nil || (try? manager.outline.entry(node.nodeID)) == nil { try? manager.outline.forgetWantedDownload(node.nodeID) }
            if let failure {
                if firstFailure { logger.warning("pin: node \(node.nodeID) could not be downloaded (tried again with backoff): \(failure)") }
            } else {
                logger.info("pin: node \(node.nodeID) is kept on this device (\(node.size) bytes)")
            }
            kick()
        }
    }
}
