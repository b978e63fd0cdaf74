import DarkDiskStore
import DarkDiskRemote
import DarkDiskSync
import Foundation
import Logging

/// Whether the remote answers, as the mount daemon sees it (offline use). Any remote request
/// that fails for want of the remote (`RemoteError.unreachable`) marks it offline, logged once per outage;
/// from then on reads of remote-only files fail at once instead of waiting, and a probe asks the remote every
/// `probeInterval` seconds until it answers. Then it is online again: the recovery handlers run (the upload
/// queue drains, pinned downloads resume). The state is kept in the store too (`storeText` key
/// `remote.state`, with the daemon's process ID), so `darkdisk status` can tell it.
public final class RemoteHealth: Sendable {
    public enum State: Sendable, Equatable {
        case online
        case offline(since: Date)

        /// `online`, or `offline since 2026-11-26T02:30:00Z`: the root's `user.darkdisk.remote`.
        public var text: String {
            switch self {
            case .online: "online"
            case .offline(let since): "offline since " + since.formatted(.iso8601)
            }
        }
    }

    private let remote: any Remote
    private let manager: DiskManager
    private let logger: Logger
    private let probeInterval: Double
    private let state = Locked<(state: State, handlers: [@Sendable () -> Void], recovered: Date?, quiet: Bool)>(
        (.online, [], nil, false))
    /// Probes while offline; rests while online, and is kicked when an outage begins.
    private let prober = Locked<BackgroundLoop?>(nil)
    /// An outage that begins this soon after the last one ended is the same trouble (a server coming back
    /// by halves, a link that drops again): its two lines are logged at debug level, not as a new outage.
    static let settling: Double = 60

    public init(remote: any Remote, manager: DiskManager, probeInterval: Double = 2, logger: Logger) {
        self.remote = remote
        self.manager = manager
        self.probeInterval = probeInterval
        self.logger = logger
        record(.online)
        let prober = BackgroundLoop(.automatic(firstAfter: .zero)) { [weak self] kicked in
            guard let self else { return .stop }
            return await self.probe(kicked: kicked)
        }
        self.prober.withLock { $0 = prober }
    }

    deinit { prober.withLock { $0 }?.stop() }

    public var current: State { state.withLock { $0.state } }
    public var isOffline: Bool { current != .online }

    /// Runs `handler` each time the remote answers again after an outage.
    public func onRecovery(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.handlers.append(handler) }
    }

    /// A remote request failed: an outage if the remote could not be reached.
    public func noteFailure(_ error: any Error) {
        guard let remoteError = error as? RemoteError, remoteError.code == .unreachable else { return }
        let started = state.withLock { state -> (Date, quiet: Bool)? in
            guard state.state == .online else { return nil }
            let now = Date()
            state.state = .offline(since: now)
            state.quiet = state.recovered.map { now.timeIntervalSince($0) < Self.settling } ?? false
            return (now, state.quiet)
        }
        if let (started, quiet) = started {
            let line = "the remote is unreachable (\(remoteError.message)); reads of files that are only there fail at once, changes queue, until it answers again"
            if quiet { logger.debug("\(line) (again, \(Int(Self.settling)) s after it came back)") } else { logger.warning("\(line)") }
            record(.offline(since: started))
            prober.withLock { $0 }?.kick()
        }
    }

    /// A remote request succeeded: the outage, if any, is over.
    public func noteSuccess() {
        let (since, quiet, handlers) = state.withLock { state -> (Date?, Bool, [@Sendable () -> Void]) in
            guard case .offline(let since) = state.state else { return (nil, false, []) }
            state.state = .online
            // (A quiet outage does not move the settling window: a remote that keeps dropping stays quiet
            // only for a minute after the outage that was told.)
            if !state.quiet { state.recovered = Date() }
            return (since, state.quiet, state.handlers)
        }
        guard let since else { return }
        let line = "the remote answers again (offline for \(Int(Date().timeIntervalSince(since))) s)"
        if quiet { logger.debug("\(line)") } else { logger.notice("\(line)") }
        record(.online)
        for handler in handlers { handler() }
    }

    /// One round of the prober: while offline, asks the remote (one small request) every `probeInterval`
    /// seconds, the first one interval after the outage began; while online, rests until kicked.
    private func probe(kicked: Bool) async -> BackgroundLoop.Next {
        let interval = Duration.milliseconds(Int(probeInterval * 1000))
        guard isOffline else { return .rest(.seconds(3600)) }
        if kicked { return .rest(interval) }
        do throws(RemoteError) {
            _ = try await remote.info("darkdisk-probe")
            noteSuccess()
        } catch {
            if error.code != .unreachable { noteSuccess() }  // it answered, if only to refuse
        }
        return .rest(interval)
    }

    private func record(_ state: State) {
        do { try manager.setText("\(getpid()) \(state.text)", for: "remote.state") } catch {
            logger.debug("cannot record the remote's state: \(error)")
        }
    }

    /// The state a running mount daemon recorded, if that daemon still runs: what `darkdisk status` shows.
    public static func recorded(in manager: DiskManager) -> String? {
        guard let text = try? manager.text("remote.state"), let space = text.firstIndex(of: " "),
              let pid = Int32(text[..<space]), kill(pid, 0) == 0 || errno == EPERM else { return nil }
        return String(text[text.index(after: space)...])
    }
}
