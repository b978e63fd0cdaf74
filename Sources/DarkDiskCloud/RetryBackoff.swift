import Foundation

/// When to try again after failures in a row: `first` seconds after the first, then twice the last wait,
/// at most `longest`. Times are the store's clock's (`DiskManager.clock`), so a test moves them.
struct RetryBackoff: Sendable {
    /// When the next try is due.
    let due: Date
    /// The wait that led to `due`.
    let seconds: Double

    /// The backoff after one more failure at `now` (`previous` nil: the first of a row).
    static func after(_ previous: RetryBackoff?, first: Double, longest: Double = 60, now: Date) -> RetryBackoff {
        let seconds = previous.map { min(longest, $0.seconds * 2) } ?? first
        return RetryBackoff(due: now.addingTimeInterval(seconds), seconds: seconds)
    }

    func isDue(at now: Date) -> Bool { now >= due }
}
