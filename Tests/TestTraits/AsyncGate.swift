import Foundation

/// A counting semaphore whose waiters suspend (the limit of `ProcessSlots`).
public final class AsyncGate: @unchecked Sendable {
    private var free: Int
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private let lock = NSLock()

    public init(slots: Int) {
        free = slots
    }

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

    /// Runs a test holding a slot, on threads of its own (`ProgramThreads`), so that whatever it blocks on
    /// holds none of the few threads of Swift's cooperative pool.
    func runTest(_ function: @Sendable () async throws -> Void) async throws {
        await acquire()
        defer { release() }
        try await withTaskExecutorPreference(ProgramThreads.shared) { try await function() }
    }
}
