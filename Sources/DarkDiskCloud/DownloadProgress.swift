import Foundation

/// Where a transfer stands: bytes, throughput and the estimated time remaining.
public struct DownloadProgress: Sendable, Equatable, Codable {
    public let completedBytes: UInt64
    public let totalBytes: UInt64
    /// Bytes that were already local when this transfer started (a resumed download).
    public let resumedBytes: UInt64
    /// Bytes per second since the transfer started (counting only bytes transferred by it).
    public let throughput: Double
    /// Seconds left at the current throughput, if it can be estimated.
    public var estimatedTimeRemaining: Double? {
        guard throughput > 0, totalBytes >= completedBytes else { return nil }
        return Double(totalBytes - completedBytes) / throughput
    }
    public var fractionCompleted: Double { totalBytes == 0 ? 1 : Double(completedBytes) / Double(totalBytes) }
}
