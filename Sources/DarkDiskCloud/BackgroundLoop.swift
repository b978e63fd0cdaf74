import DarkDiskSync
import Foundation

/// A job the mount runs again and again in the background (draining the upload queue, polling the remote,
/// keeping pins): one round, then a rest of the length that round asks for, cut short by `kick()`, until
/// `stop()`. Rounds never overlap. The services hold their state between rounds; the loop holds only its
/// task and its wakeup.
///
/// A loop made `.manual` never runs a round of its own: a test steps it with `runOnce()` (after moving the
/// store's `ManualClock`, say) instead of sleeping in real time and hoping a round came.
package final class BackgroundLoop: Sendable {
    package enum Schedule: Sendable {
        /// Rounds run on a task of the loop's own, the first after `firstAfter`.
        case automatic(firstAfter: Duration)
        /// Rounds run only when `runOnce()` is called.
        case manual
    }

    /// What a round asks of the loop.
    package enum Next: Sendable {
        /// Run again after this rest (or at the next kick).
        case rest(Duration)
        /// Run no more.
        case stop
    }

    /// One round; `kicked`: whether `kick()` was called since the last round began.
    package typealias Round = @Sendable (_ kicked: Bool) async -> Next

    private let round: Round
    private let wake = AsyncWakeup()
    private let task = Locked<Task<Void, Never>?>(nil)

    package init(_ schedule: Schedule, round: @escaping Round) {
        self.round = round
        guard case .automatic(let first) = schedule else { return }
        let wake = self.wake
        let task = Task.detached {
            var rest = first
            while !Task.isCancelled {
                if rest > .zero { await wake.wait(seconds: Self.seconds(rest)) }
                if Task.isCancelled { break }
                guard case .rest(let next) = await round(wake.takeKick()) else { break }
                rest = next
            }
        }
        self.task.withLock { $0 = task }
    }

    /// Runs one round now, on the caller's task (a `.manual` loop's only way to run); what it asked for.
    @discardableResult
    package func runOnce() async -> Next {
        await round(wake.takeKick())
    }

    /// Ends the rest in progress: the next round starts now.
    package func kick() { wake.kick() }

    /// Runs no more rounds; one in progress ends at its next check of cancellation.
    package func stop() {
        task.withLock { $0?.cancel() }
        wake.kick()
    }

    /// `stop()`, then waits up to `timeout` seconds for the round in progress to end; whether it did. (From
    /// a thread outside the cooperative pool: the caller's thread blocks.)
    @discardableResult
    package func stopAndWait(timeout: Double) -> Bool {
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

    deinit {
        task.withLock { $0?.cancel() }
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
