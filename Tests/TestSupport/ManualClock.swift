import DarkDiskSystem
import Foundation
import Synchronization

/// A store or cache clock that moves only when a test moves it: expiry tests advance it instead of sleeping.
public final class ManualClock: StoreClock {
    private let current: Mutex<Date>

    public init(_ start: Date = Date()) {
        current = Mutex(start)
    }

    public var now: Date { current.withLock { $0 } }

    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 += seconds }
    }
}
