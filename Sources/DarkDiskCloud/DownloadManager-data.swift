import DarkDiskStore
import DarkDiskCrypto
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import DarkDiskSystem

extension DownloadManager {
    /// Downloads the node's whole cloud file. With `options.cacheToDiskManager` it enters the cache pool as the
    /// node's data; otherwise the result is a temporary file that lives as long as its holders. A node that
    /// is already local is answered from the store without a transfer, unless `options.policy` is `.remote`
    /// (downloaded again, and it replaces the stored copy); with `.storedOnly` a node that is not local is
    /// a `notLocal` error.
    public func downloadNodeData(_ nodeID: NodeID, options: DownloadOptions = .nodeData) -> DownloadTicket<NodeDataDownload> {
        if options.policy != .remote, let local: DownloadTicket<NodeDataDownload> = answered(options, {
            try manager.files.nodeFile(nodeID, kind: .data).map { export throws(DarkDiskError) in
                NodeDataDownload(export: try keep(export, of: nodeID, persistently: options.storePersistently))
            }
        }) {
            return local
        }
        if options.policy == .storedOnly {
            return DownloadTicket(options: options, result: .failure(RemoteError(.notLocal, "node '\(nodeID)' is not stored locally (and this request may not download)")))
        }
        return nodes.using(nodeID, of: self) { $0.ticket(options) }
    }

    /// `export` (node `nodeID`'s data), made persistent first when `persistently` and it is in the cache
    /// pool. Blocking.
    func keep(_ export: DiskExport, of nodeID: NodeID, persistently: Bool) throws(DarkDiskError) -> DiskExport {
        guard persistently, !export.isStoredPersistently else { return export }
        try manager.files.makeNodeFilePersistent(true, nodeID: nodeID, kind: .data)
        return try manager.files.nodeFile(nodeID, kind: .data) ?? export
    }

    /// Cuts a downloaded cloud file's padding off (`CloudFilePadding`: random bytes after the length its
    /// authenticated header describes, fetched with the rest when the length could not be told before), so
    /// that what is kept or checked is the cloud file itself; returns its header, authenticated with `key`
    /// (errors name the file `name`), and the length the file had. A file of another format is left as it is.
    static func cutPadding(_ path: String, key: SymmetricKey, name: String) throws -> (header: CryptoFileHeader, length: UInt64) {
        let file: OwnedDescriptor
        do { file = try OwnedDescriptor.open(path, O_RDWR) } catch { throw RemoteError(.io, "cannot open \(path): \(error)") }
        let bytes: [UInt8]
        do { bytes = try file.pread(count: CryptoFormat.headerSize, at: 0) } catch {
            throw RemoteError(.io, "cannot read \(path): \(error)")
        }
        let header = try CryptoFileHeader(authenticating: bytes, key: key, name: name)
        let length: UInt64
        do { length = UInt64(try file.stat().st_size) } catch { throw RemoteError(.io, "cannot stat \(path): \(error)") }
        guard header.format == .cloudFile, length > header.fileLength else { return (header, length) }
        do { try file.truncate(to: header.fileLength) } catch {
            throw RemoteError(.io, "cannot cut the padding off \(path): \(error)")
        }
        return (header, length)
    }
}
