import Foundation
import DarkDiskTestSupport
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

    /// Shared with the other test targets' program-running tests (the same process runs them all).
    private static var gate: AsyncGate { AsyncGate.processSlots }
}

extension Trait where Self == ProcessSlots {
    /// The suite's tests run programs: at most one per core at a time (see `ProcessSlots`).
    static var processSlots: ProcessSlots { ProcessSlots() }
}
