import DarkDiskSync

/// The clock memory caches read to expire remembered "no image" answers. The default is the continuous
/// clock; a test (or a simulation) passes a manual one and moves it instead of sleeping.
public struct ExpiryClock: Sendable {
    /// The current instant.
    public let now: @Sendable () -> ContinuousClock.Instant

    public init(now: @escaping @Sendable () -> ContinuousClock.Instant) {
        self.now = now
    }

    /// `ContinuousClock.now`.
    public static let continuous = ExpiryClock { .now }

    /// A clock that stands still until `advance` moves it (it starts at the continuous clock's now).
    public static func manual() -> (clock: ExpiryClock, advance: @Sendable (Duration) -> Void) {
        let current = Locked(ContinuousClock.now)
        return (ExpiryClock { current.withLock { $0 } }, { step in current.withLock { $0 = $0 + step } })
    }
}
