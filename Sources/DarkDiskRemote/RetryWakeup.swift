import DarkDiskSync
import Synchronization

/// The pauses between retries of remote requests, which a reader waiting for bytes cuts short. A transfer
/// that met an outage backs off for up to 6.4 s between tries; without this, a read made just after the
/// remote came back waited out that pause (and the next failures' ones) and failed meanwhile, although one
/// request would have succeeded.
public enum RetryWakeup {
    private static let sleepers = Locked<[UInt64: CheckedContinuation<Void, Never>]>([:])
    private static let nextID = Atomic<UInt64>(0)
    private static let lastWake = Locked<ContinuousClock.Instant?>(nil)
    /// At most one early retry per second, however many readers wait: during an outage the pauses still
    /// spare the remote.
    static let minimumInterval: Duration = .seconds(1)

    /// Sleeps `nanoseconds`, or less if `wakeAll()` is called or the task is cancelled meanwhile.
    static func sleep(nanoseconds: UInt64) async {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                sleepers.withLock { $0[id] = continuation }
                if Task.isCancelled { resume(id) }
                Task.detached {
                    try? await Task.sleep(nanoseconds: nanoseconds)
                    resume(id)
                }
            }
        } onCancel: {
            resume(id)
        }
    }

    /// Ends every pause now (unless that was done less than a second ago): the requests waiting to be
    /// retried are tried at once.
    public static func wakeAll() {
        let now = ContinuousClock.now
        let due = lastWake.withLock { last -> Bool in
            guard last.map({ now - $0 >= minimumInterval }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return }
        let all = sleepers.withLock { sleepers in
            defer { sleepers.removeAll() }
            return Array(sleepers.values)
        }
        for continuation in all { continuation.resume() }
    }

    private static func resume(_ id: UInt64) {
        sleepers.withLock { $0.removeValue(forKey: id) }?.resume()
    }
}
