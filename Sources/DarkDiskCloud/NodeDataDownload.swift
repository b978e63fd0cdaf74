import DarkDiskStore
import DarkDiskCrypto
#if canImport(Glibc)
import Glibc
#endif

/// What `downloadNodeData` delivers: the node's whole cloud file (metadata, thumbnail and data sections),
/// authenticated, and retained while this value (or a copy of its `cryptoFile`) is alive.
public struct NodeDataDownload: Sendable {
    /// The cloud file. Without caching it is a temporary file, removed when the last reference goes.
    public let cryptoFile: CryptoFile
    /// The stored file, when the download was cached by the DiskManager (or the node was already local).
    public let export: DiskExport?

    init(export: DiskExport) {
        self.cryptoFile = export.cryptoFile
        self.export = export
    }

    init(temporary cryptoFile: CryptoFile) {
        self.cryptoFile = cryptoFile
        self.export = nil
    }

    /// Removes a temporary file now, for a holder that knows it is the last in its process (a command that
    /// streamed it and exits: the transfer's task that still refers to it may not end before the process
    /// does). Readers already open keep reading it. A stored file (`export`) is left alone.
    public func removeTemporaryFile() {
        guard export == nil else { return }
        unlink(cryptoFile.path)
    }
}
