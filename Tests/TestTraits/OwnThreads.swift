import Testing

/// Runs each of a suite's tests on `ProgramThreads`, with no limit on how many at once: for in-process
/// tests that block for long (they start a server, moto or nginx, and wait for it to listen), so that they
/// never hold a thread of Swift's cooperative pool while they do.
public struct OwnThreads: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        guard testCase != nil else { return try await function() }
        try await withTaskExecutorPreference(ProgramThreads.shared) { try await function() }
    }
}

extension Trait where Self == OwnThreads {
    /// The suite's tests start servers and wait for them: each runs on a thread of its own (`OwnThreads`).
    public static var ownThreads: OwnThreads { OwnThreads() }
}
