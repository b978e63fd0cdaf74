import Synchronization
import DarkDiskSync

/// Fans store changes out to every live `AsyncStream` subscriber; a subscriber that stops iterating is dropped.
final class ChangeBroadcaster: Sendable {
    private let subscribers = Locked<[UInt64: AsyncStream<StoreChange>.Continuation]>([:])
    private let nextID = Atomic<UInt64>(0)

    func subscribe(pool: Pool?) -> AsyncStream<StoreChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: StoreChange.self, bufferingPolicy: .bufferingNewest(4096))
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        let filtered = pool
        subscribers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: id) }
        }
        guard let filtered else { return stream }
        return AsyncStream { inner in
            let task = Task {
                for await change in stream where change.pool == filtered { inner.yield(change) }
                inner.finish()
            }
            inner.onTermination = { _ in task.cancel() }
        }
    }

    func send(_ change: StoreChange) {
        let targets = subscribers.withLock { Array($0.values) }
        for continuation in targets { continuation.yield(change) }
    }

    func finish() {
        let targets = subscribers.withLock { dict in defer { dict.removeAll() }; return Array(dict.values) }
        for continuation in targets { continuation.finish() }
    }
}
