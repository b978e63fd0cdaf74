/// Collects elements of `stream` (a store's or a cache's change notifications) until `done` says enough,
/// or gives up after `timeout` seconds (returns nil then), so that a missing event fails the test instead
/// of hanging it.
public func collectChanges<Element: Sendable>(_ stream: AsyncStream<Element>, timeout: Double = 5,
                                              until done: @escaping @Sendable ([Element]) -> Bool) async throws -> [Element]? {
    try await withThrowingTaskGroup(of: [Element]?.self) { group in
        group.addTask {
            var seen: [Element] = []
            for await element in stream {
                seen.append(element)
                if done(seen) { return seen }
            }
            return done(seen) ? seen : nil
        }
        group.addTask {
            try await Task.sleep(for: .seconds(timeout))
            return nil
        }
        let first = try await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
