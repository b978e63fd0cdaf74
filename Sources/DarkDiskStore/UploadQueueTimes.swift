import Foundation

/// The upload queue's two times that tell whether the drive is busy writing (`UploadQueue.times`).
public struct UploadQueueTimes: Sendable, Equatable {
    /// When the latest change was queued (a file closed, renamed, deleted…), whatever its state.
    public var newestChange: Date
    /// When the oldest pending change was queued; nil if none is (each is being uploaded, or failed and waits
    /// for its retry: a change that keeps failing must not hold the drive's rest open for good).
    public var oldestWaiting: Date?

    public init(newestChange: Date, oldestWaiting: Date?) {
        self.newestChange = newestChange
        self.oldestWaiting = oldestWaiting
    }

    /// Whether uploads may run at `now`: the drive has rested `writeBack` seconds since its latest change, or
    /// a change has waited `longestHold` seconds (a drive written without a pause still uploads, that far
    /// behind).
    public func allowUploads(at now: Date, writeBack: Double, longestHold: Double) -> Bool {
        if newestChange <= now.addingTimeInterval(-writeBack) { return true }
        guard let oldestWaiting else { return false }
        return oldestWaiting <= now.addingTimeInterval(-longestHold)
    }
}
