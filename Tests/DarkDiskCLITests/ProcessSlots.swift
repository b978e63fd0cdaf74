import Foundation
import DarkDiskSync
import Testing

/// A limit on how many tests that run programs (the CLI, mounts, servers) run at once. Their waits for
/// those programs suspend instead of blocking a thread of Swift's cooperative pool, so without a limit
/// Swift Testing would start every such test together; with it, the suite runs as many as the machine has
/// cores for, as it did when the waits blocked, and in-process work always finds a free thread.
struct ProcessSlots: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // A suite's own scope (testCase nil) is not a test: only test cases take a slot.
        guard testCase != nil else { return try await function() }
        await Self.gate.acquire()
        defer { Self.gate.release() }
        try await function()
    }

    private static let gate = AsyncGate(slots: max(2, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
}

extension Trait where Self == ProcessSlots {
    /// The suite's tests run programs: at most one per core at a time (see `ProcessSlots`).
    static var processSlots: ProcessSlots { ProcessSlots() }
}

/// A counting semaphore whose waiters suspend.
final class AsyncGate: Sendable {
    private struct State {
        var free: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Locked<State>

    init(slots: Int) {
        state = Locked(State(free: slots))
    }

    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                guard state.free == 0 else { state.free -= 1; return true }
                state.waiters.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else { state.free += 1; return nil }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
