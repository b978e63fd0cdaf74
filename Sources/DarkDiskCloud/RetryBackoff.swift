/// When to try again after failures in a row: `first` seconds after the first, then twice the last wait,
/// at most `longest`.
struct RetryBackoff: Sendable {
    /// When the next try is due.
    let due: ContinuousClock.Instant
    /// The wait that led to `due`.
    let seconds: Double

    /// The backoff after one more failure (`previous` nil: the first of a row).
    static func after(_ previous: RetryBackoff?, first: Double, longest: Double = 60) -> RetryBackoff {
        let seconds = previous.map { min(longest, $0.seconds * 2) } ?? first
        return RetryBackoff(due: .now + .milliseconds(Int(seconds * 1000)), seconds: seconds)
    }

    func isDue(at now: ContinuousClock.Instant = .now) -> Bool { now >= due }
}
