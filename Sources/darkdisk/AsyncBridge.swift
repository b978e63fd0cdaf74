import Foundation
import DarkDiskSync

/// Runs async work to completion from synchronous code (the CLI's entry point), blocking the calling thread,
/// which is not one of the concurrency pool's threads.
enum AsyncBridge {
    static func run(_ body: sending @escaping () async throws -> Void) throws {
        let outcome = Locked<Result<Void, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let result: Result<Void, any Error>
            do { try await body(); result = .success(()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        try outcome.withLock { $0! }.get()
    }
}
