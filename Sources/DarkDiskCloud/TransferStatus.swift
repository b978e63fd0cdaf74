import Foundation

/// One transfer in flight, as `DownloadManager.transfersInFlight` lists it (ZeroDark.cloud's progress manager):
/// what it fetches, how far it is and how many requests wait for it.
public struct TransferStatus: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable {
        case nodeData, nodeMeta, userAvatar
    }

    public let kind: Kind
    /// The node ID, or the user ID for an avatar.
    public let ownerID: String
    /// The identity of an avatar when one was named; nil otherwise.
    public let identityID: String?
    public let completedBytes: UInt64
    /// 0 until the transfer knows the size.
    public let totalBytes: UInt64
    public let resumedBytes: UInt64
    /// Bytes per second this transfer has moved so far.
    public let throughput: Double
    public let started: Date
    /// Tickets waiting for it (identical requests share one transfer).
    public let requests: Int

    public var progress: DownloadProgress {
        DownloadProgress(completedBytes: completedBytes, totalBytes: totalBytes, resumedBytes: resumedBytes, throughput: throughput)
    }

    /// "data of node X", "meta of node X", "avatar of user U (identity I)".
    public var subject: String {
        switch kind {
        case .nodeData: "data of node \(ownerID)"
        case .nodeMeta: "meta of node \(ownerID)"
        case .userAvatar: "avatar of user \(ownerID)" + (identityID.map { " (identity \($0))" } ?? "")
        }
    }

    init(key: TransferKey, progress: DownloadProgress, started: Date, requests: Int) {
        switch key {
        case .nodeData(let node, _): (kind, ownerID, identityID) = (.nodeData, node.rawValue, nil)
        case .nodeMeta(let node, _, _): (kind, ownerID, identityID) = (.nodeMeta, node.rawValue, nil)
        case .userAvatar(let user, let identity, _): (kind, ownerID, identityID) = (.userAvatar, user.rawValue, identity?.rawValue)
        }
        completedBytes = progress.completedBytes
        totalBytes = progress.totalBytes
        resumedBytes = progress.resumedBytes
        throughput = progress.throughput
        self.started = started
        self.requests = requests
    }
}
