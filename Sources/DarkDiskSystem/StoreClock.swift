import Foundation

/// The wall clock a store or a disk cache reads for modification and access times and for expiry. A program
/// passes its own to run expiry on another timeline (a test moves a manual clock forward instead of sleeping).
public protocol StoreClock: Sendable {
    /// The current time.
    var now: Date { get }
}

/// The system's wall clock: the default.
public struct SystemClock: StoreClock {
    public init() {}
    public var now: Date { Date() }
}
