import DarkDiskSync

/// A wake-up for a polling task: `wait` returns after the timeout, or at once after a `kick` (kicks made
/// while nobody waits are kept for the next wait). One task waits at a time.
final class AsyncWakeup: Sendable {
    private struct State {
        var kicked = false
        var waiter: (wait: UInt64, continuation: CheckedContinuation<Void, Never>)?
        /// The wait whose time ran out before it began to wait (a loaded machine can run the timer first).
        var expired: UInt64?
        var nextWait: UInt64 = 0
    }
    private let state = Locked(State())

    func kick() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.kicked = true
            defer { state.waiter = nil }
            return state.waiter?.continuation
        }
        waiter?.resume()
    }

    /// Whether a kick came since the last call (and forgets it).
    func takeKick() -> Bool {
        state.withLock { state in defer { state.kicked = false }; return state.kicked }
    }

    func wait(seconds: Double) async {
        let wait = state.withLock { state in defer { state.nextWait &+= 1 }; return state.nextWait }
        let timer = Task { [self] in
            try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            // Cancelled: the wait ended by a kick.
            if Task.isCancelled { return }
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let waiter = state.waiter, waiter.wait == wait else {
                    state.expired = wait
                    return nil
                }
                state.waiter = nil
                return waiter.continuation
            }
            waiter?.resume()
        }
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.kicked || state.expired == wait { return true }
                state.waiter = (wait, continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
        timer.cancel()
    }
}
