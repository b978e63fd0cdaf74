import DarkDiskStore

/// Where a reader finds a node's bytes (see `DownloadManager.whenAvailable`): the stored file, or the
/// partial file of the download in flight, whose bytes in the range asked for are already written.
package enum NodeDataSource: Sendable {
    /// The node's stored data, retained while this value lives.
    case stored(DiskExport)
    /// The download's partial file, which has the full length of the cloud file (unreceived bytes are zero).
    case downloading(SharedDescriptor)
}
