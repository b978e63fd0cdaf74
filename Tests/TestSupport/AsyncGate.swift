import Foundation

/// A counting semaphore whose waiters suspend. `processSlots` is the one limit every test target shares on
/// how many tests that run programs (the CLI, mounts, servers) run at once: one per core.
public final class AsyncGate: @unchecked Sendable {
    private var free: Int
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private let lock = NSLock()

    public init(slots: Int) {
        free = slots
    }

    /// The gate of the tests that run programs (see the `processSlots` traits of the test targets).
    public static let processSlots = AsyncGate(slots: max(2, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))

    public func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            let granted = free > 0
            if granted { free -= 1 } else { waiters.append(continuation) }
            lock.unlock()
            if granted { continuation.resume() }
        }
    }

    public func release() {
        lock.lock()
        let next = waiters.isEmpty ? nil : waiters.removeFirst()
        if next == nil { free += 1 }
        lock.unlock()
        next?.resume()
    }
}
