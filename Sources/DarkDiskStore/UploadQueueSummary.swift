/// The upload queue in brief, for `darkdisk status`: how many changes wait in each state, the bytes of their
/// data, and the first few in queue order with their names.
public struct UploadQueueSummary: Sendable {
    public var counts: [QueuedUpload.State: Int] = [:]
    public var bytes: [QueuedUpload.State: UInt64] = [:]
    public var first: [(upload: QueuedUpload, name: String?)] = []

    public init() {}

    /// Changes waiting in all.
    public var total: Int { counts.values.reduce(0, +) }
}
