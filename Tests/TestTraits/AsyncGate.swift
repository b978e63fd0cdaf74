import Foundation

/// A counting semaphore whose waiters suspend (the limit of `ProcessSlots`).
final class AsyncGate: @unchecked Sendable {
    private var free: Int
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private let lock = NSLock()

    init(slots: Int) {
        free = slots
    }

    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            let granted = free > 0
            if granted { free -= 1 } else { waiters.append(continuation) }
            lock.unlock()
            if granted { continuation.resume() }
        }
    }

    func release() {
        lock.lock()
        let next = waiters.isEmpty ? nil : waiters.removeFirst()
        if next == nil { free += 1 }
        lock.unlock()
        next?.resume()
    }
}
