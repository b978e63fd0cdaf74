import DarkDiskSync
import DarkDiskSystem
import Foundation

/// A store or cache clock that moves only when a test moves it: expiry tests advance it instead of sleeping.
public final class ManualClock: StoreClock {
    private let current: Locked<Date>

    public init(_ start: Date = Date()) {
        current = Locked(start)
    }

    public var now: Date { current.withLock { $0 } }

    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 += seconds }
    }
}
