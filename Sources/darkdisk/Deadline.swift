import DarkDiskSystem

/// A limit on the time a command's remote work may take: past it the work is cancelled (its requests
/// stop) and the command fails with one line.
enum Deadline {
    /// Runs `work`; if it has not finished within `limit`, cancels it, waits for it to stop, and throws `error`.
    static func run<T: Sendable>(_ limit: Duration, otherwise error: some Error & Sendable,
                                 _ work: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await work() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            while let next = try await group.next() {
                if let value = next { return value }
                throw error
            }
            throw error
        }
    }

    /// Seconds as a user wrote them: `5`, `2.5`.
    static func text(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
