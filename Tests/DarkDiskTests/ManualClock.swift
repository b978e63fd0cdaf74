import DarkDisk
import DarkDiskSync
import Foundation

/// A store clock that moves only when a test moves it: expiry tests advance it instead of sleeping.
final class ManualClock: StoreClock {
    private let current: Locked<Date>

    init(_ start: Date = Date()) {
        current = Locked(start)
    }

    var now: Date { current.withLock { $0 } }

    func advance(by seconds: TimeInterval) {
        current.withLock { $0 += seconds }
    }
}
