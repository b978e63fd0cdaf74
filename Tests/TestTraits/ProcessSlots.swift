import Foundation
import Testing

/// A limit on how many tests that run programs (the CLI, mounts, servers) run at once, one per core, and
/// threads of their own to run on (`ProgramThreads`). Their blocking calls (a `waitpid`, a `cat` through a
/// mount) then hold one of those threads, never one of the few of Swift's cooperative pool, which the
/// in-process tests, the library's own tasks and every test's wake-ups need.
public struct ProcessSlots: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // A suite's own scope (testCase nil) is not a test: only test cases take a slot.
        guard testCase != nil else { return try await function() }
        await Self.gate.acquire()
        defer { Self.gate.release() }
        try await OwnThreads().provideScope(for: test, testCase: testCase, performing: function)
    }

    /// Shared by every test target's program-running tests (the same process runs them all).
    private static let gate = AsyncGate(slots: max(2, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
}

extension Trait where Self == ProcessSlots {
    /// The suite's tests run programs: at most one per core at a time, on threads of their own.
    public static var processSlots: ProcessSlots { ProcessSlots() }
}
