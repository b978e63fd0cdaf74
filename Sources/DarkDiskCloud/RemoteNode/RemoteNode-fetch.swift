import DarkDiskStore
import DarkDiskCrypto
import DarkDiskSystem
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The downloader of a remote node: its running transfer's task. It takes the node's download lock (one
/// downloader per node across processes), fetches the missing parts of the cloud file into the partial
/// file, records them, and hands the authenticated file to the store or to a temporary owner.
extension RemoteNode {
    /// Downloads the node's whole cloud file for `transfer` (see `DownloadManager.downloadNodeData`).
    func download(refresh: Bool, _ transfer: Transfer<NodeDataDownload>) async throws -> NodeDataDownload {
        let manager = downloads.manager
        let nodeID = self.nodeID
        // One downloader per node across processes: another process's holds the lock file.
        var lock: DownloadLock?
        while true {
            let attempt = try await downloads.blocking { () throws -> LockAttempt in
                if !refresh, let local = try manager.files.nodeFile(nodeID, kind: .data) { return .stored(local) }
                guard let lock = try DownloadLock.tryAcquire(try self.downloads.downloadLockPath(nodeID)) else { return .busy }
                return .acquired(lock)
            }
            switch attempt {
            case .stored(let local):
                // Stored meanwhile (by another process, say): readers waiting on its bytes read it now.
                let persistently = transfer.persistenceWanted
                return NodeDataDownload(export: try await downloads.blocking { try self.keep(local, persistently: persistently) })
            case .acquired(let acquired):
                lock = acquired
            case .busy:
                // Another process downloads the node: poll its lock. The wait suspends; no thread is held
                // while it lasts. That process serves this node's readers meanwhile, from its partial file as
                // far as it has recorded it (it fetches in its own order).
                try await downloads.blocking { self.mirrorOtherDownloader() }
                try await Task.sleep(nanoseconds: 100_000_000)
                continue
            }
            break
        }
        defer { withExtendedLifetime(lock) {} }  // released once the fetch ended, however it ended
        return try await fetch(transfer)
    }

    /// While another process holds the node's download lock: serves the node's readers from its partial
    /// file, as far as its index row records it. Blocking.
    private func mirrorOtherDownloader() {
        guard let download = try? downloads.manager.files.partialDownload(nodeID), !download.ranges.isEmpty else { return }
        mirror(path: download.path, ranges: download.ranges)
    }

    private func fetch(_ transfer: Transfer<NodeDataDownload>) async throws -> NodeDataDownload {
        let manager = downloads.manager
        let remote = downloads.remote
        let nodeID = self.nodeID
        let (entry, key) = try await downloads.blocking { () throws -> (OutlineEntry, SymmetricKey) in
            guard let entry = try manager.outline.entry(nodeID) else {
                throw RemoteError(.unknownNode, "node '\(nodeID)' is not stored locally and the remote's outline does not have it")
            }
            return (entry, try manager.keys.unwrap(entry.wrappedKey, for: .node(entry.nodeID)))
        }
        let objectKey = CloudLayout.cloudFile(of: entry, with: manager)
        for attempt in 0..<3 {
            guard let info = try await remote.info(objectKey) else {
                throw RemoteError(.notFound, "node '\(nodeID)' is in the outline but its cloud file is not in \(remote.url)")
            }
            // A padded object: only the cloud file is fetched, when the record's sizes at the chunk size files
            // are written with give the length it was padded from (else the whole object: `finish` cuts the
            // padding off). The header, checked as it arrives, must then describe exactly that length.
            let sizes = [entry.metadataSize, entry.thumbnailSize, entry.dataSize]
            let size = CloudFilePadding.fileLength(sectionSizes: sizes)
                .flatMap { CloudFilePadding.accepts(objectSize: info.size, fileLength: $0) ? $0 : nil } ?? info.size
            let download = try await downloads.blocking { () throws -> PartialDownload in
                if let download = try manager.files.partialDownload(nodeID), download.etag == info.etag, download.size == size {
                    return download
                }
                return try manager.files.beginPartialDownload(nodeID, etag: info.etag, size: size)
            }
            do {
                try await fetchMissing(download, key: objectKey, objectSize: info.size, nodeKey: key, record: entry, transfer: transfer)
            } catch let error as RemoteError where error.code == .changed && attempt < 2 {
                // The cloud file was replaced mid-download: its parts do not go together. Start over.
                try await downloads.blocking { try manager.files.removePartialDownload(nodeID) }
                continue
            }
            return try await downloads.blocking { try self.finish(download, key: key, transfer: transfer) }
        }
        throw RemoteError(.changed, "node '\(nodeID)' keeps changing in the cloud while it downloads")
    }

    /// `export` (the node's data), made persistent first when `persistently` and it is in the cache pool.
    /// Blocking.
    func keep(_ export: DiskExport, persistently: Bool) throws(DarkDiskError) -> DiskExport {
        try downloads.keep(export, of: nodeID, persistently: persistently)
    }

    /// Authenticates the complete partial file and hands it to the store or to a temporary owner. Blocking:
    /// reads the whole file, and may copy it and evict to make room.
    private func finish(_ download: PartialDownload, key: SymmetricKey, transfer: Transfer<NodeDataDownload>) throws -> NodeDataDownload {
        let manager = downloads.manager
        do {
            _ = try DownloadManager.cutPadding(download.path, key: key, name: download.path)
            _ = try CryptoFileReader(path: download.path, key: key)
        } catch {
            try manager.files.removePartialDownload(nodeID)
            throw RemoteError(.invalidResponse, "the cloud file of node '\(nodeID)' does not authenticate: \(error)")
        }
        let file = CryptoFile(path: download.path, format: .cloudFile, key: key)
        if transfer.decideCaching() {
            do throws(DarkDiskError) {
                var importing = DiskImport(cryptoFile: file)
                // A refresh of a node kept persistently keeps it persistently.
                let keptPersistently = try manager.files.storedFile(nodeID, kind: .data)?.mode == .persistent
                importing.storePersistently = transfer.persistenceWanted || keptPersistently
                let export = try manager.importNodeFile(importing, nodeID: nodeID, kind: .data)
                try manager.files.removePartialDownload(nodeID)
                return NodeDataDownload(export: export)
            } catch {
                // Larger than the whole cache pool: the store cannot keep it, its readers still get it (below).
                guard error.code == .tooLarge else { throw error }
            }
        }
        let path = try downloads.cacheFolder(URL(fileURLWithPath: manager.location.temporaryDownloads).lastPathComponent) + "/" + UUID().uuidString + ".ddc"
        let owner: TemporaryDownload
        do { owner = try TemporaryDownload(moving: download.path, to: path) } catch {
            throw RemoteError(.io, "cannot keep the download of node '\(nodeID)': \(error.message)")
        }
        try manager.files.removePartialDownload(nodeID)
        return NodeDataDownload(temporary: CryptoFile(path: path, format: .cloudFile, key: key, retainToken: owner))
    }

    /// Fetches the missing parts, `parallelParts` at a time, plus one worker for parts that readers wait for;
    /// each part is streamed into the partial file with `pwrite` and recorded as it lands. Whatever arrived
    /// before a failure stays recorded for the next attempt.
    ///
    /// The header is authenticated with the node's key as soon as its bytes have arrived, before they (or
    /// anything of the part they came in) count as received: another node's cloud file under this node's
    /// name, or one cut short or extended on the remote, ends the download and its partial file at once.
    private func fetchMissing(_ download: PartialDownload, key objectKey: String, objectSize: UInt64, nodeKey: SymmetricKey, record: OutlineEntry,
                              transfer: Transfer<NodeDataDownload>) async throws {
        let file = try await downloads.blocking { () throws -> OwnedDescriptor in
            let file: OwnedDescriptor
            do { file = try OwnedDescriptor.open(download.path, O_WRONLY | O_CREAT, mode: 0o600) } catch {
                throw RemoteError(.io, "cannot open \(download.path): \(error)")
            }
            do { try file.truncate(to: download.size) } catch { throw RemoteError(.io, "cannot size \(download.path): \(error)") }
            return file
        }
        // Kept open until no checkpoint of the recorder can run any more (each path below settles or flushes it).
        defer { withExtendedLifetime(file) {} }
        let fd = file.rawValue
        let manager = downloads.manager
        let recorder = PartRecorder(download, file: file, manager: manager, checkpointBytes: downloads.checkpointBytes) { transfer.report($0) }
        try activate(path: download.path, ranges: download.ranges, pending: download.missingParts(partSize: downloads.partSize))
        let etag = download.etag
        let remote = downloads.remote
        let size = download.size
        let headerRefused = RefusalFlag()
        @Sendable func fetch(_ part: Range<UInt64>) async throws {
            var cursor = part.lowerBound
            // The part holding the header records nothing until the header has authenticated.
            var header: [UInt8]? = part.lowerBound == 0 ? [] : nil
            try await remote.read(objectKey, range: part, ifMatch: etag) { (bytes: UnsafeRawBufferPointer) throws(RemoteError) in
                guard UInt64(bytes.count) <= part.upperBound - cursor else {
                    throw RemoteError(.invalidResponse, "\(objectKey): more bytes than the part \(part) asked for")
                }
                try Self.write(bytes, to: fd, at: cursor)
                var range = cursor..<cursor + UInt64(bytes.count)
                cursor += UInt64(bytes.count)
                if var pending = header {
                    pending += bytes.prefix(CryptoFormat.headerSize - pending.count)
                    header = pending
                    guard pending.count == CryptoFormat.headerSize || cursor == part.upperBound else { return }
                    do throws(RemoteError) {
                        try Self.checkHeader(pending, of: record, objectKey: objectKey, size: objectSize, fetching: size, key: nodeKey)
                    } catch {
                        headerRefused.raised.store(true, ordering: .relaxed)
                        throw error
                    }
                    header = nil
                    range = part.lowerBound..<cursor
                }
                try recorder.received(range)
                self.received(range)
            }
            guard cursor == part.upperBound else {
                throw RemoteError(.invalidResponse, "\(objectKey): the body of part \(part) ended after \(cursor - part.lowerBound) bytes")
            }
        }
        do {
            let parallelParts = downloads.parallelParts
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    while let part = await self.nextUrgentPart() { try await fetch(part) }
                }
                group.addTask {
                    try await withThrowingTaskGroup(of: Void.self) { workers in
                        for _ in 0..<parallelParts {
                            workers.addTask { while let part = self.nextPart() { try await fetch(part) } }
                        }
                        while try await workers.next() != nil {}  // the first failure cancels the others
                    }
                    self.closeQueue()  // Every part is fetched: let the urgent worker go.
                }
                while try await group.next() != nil {}
            }
        } catch {
            closeQueue()
            if headerRefused.raised.load(ordering: .relaxed) {
                // Nothing of this file is this node's: drop what arrived rather than resume from it (after
                // any checkpoint in flight, which would record it again).
                await recorder.settle()
                try? await downloads.blocking { try manager.files.removePartialDownload(download.nodeID) }
            } else {
                try? await recorder.flush()
            }
            throw error
        }
        try await recorder.flush()
        // Never hand on a file with a gap: the parts handed out must have covered it all. (A complete file
        // is kept even when the transfer was cancelled meanwhile: a `cat` that closed after its last byte.)
        let missing = recorder.download.missingParts(partSize: max(recorder.download.size, 1))
        guard missing.isEmpty else {
            // A cancelled transfer's workers stop taking parts: that is a cancellation, not a gap.
            try Task.checkCancellation()
            throw RemoteError(.io, "the download of \(objectKey) ended with \(missing.reduce(0) { $0 + $1.count }) bytes missing (\(missing.count) ranges); it resumes at the next read")
        }
    }

    /// Authenticates a data download's header with the node's key and checks it describes a cloud file of
    /// the size the remote reports (padded, or exactly), no longer than the `fetching` bytes the download
    /// takes, with the section sizes the node's record gives.
    private static func checkHeader(_ bytes: [UInt8], of record: OutlineEntry, objectKey: String, size: UInt64,
                                    fetching: UInt64, key: SymmetricKey) throws(RemoteError) {
        let nodeID = record.nodeID
        let header: CryptoFileHeader
        do {
            header = try CryptoFileHeader(authenticating: bytes, key: key, name: objectKey)
        } catch {
            throw RemoteError(.invalidResponse, "the cloud file of node '\(nodeID)' does not authenticate with the node's key (another node's file, or damaged): \(error.message)")
        }
        guard header.format == .cloudFile else {
            throw RemoteError(.invalidResponse, "the cloud file of node '\(nodeID)' is not a cloud file (its header says \(header.format))")
        }
        guard CloudFilePadding.accepts(objectSize: size, fileLength: header.fileLength), header.fileLength <= fetching else {
            throw RemoteError(.invalidResponse, "the cloud file of node '\(nodeID)' is \(size) bytes but its header describes \(header.fileLength) (padded: \(CloudFilePadding.paddedLength(header.fileLength))): cut short or extended on the remote")
        }
        try record.checkAgreement(with: header, objectKey: objectKey)
    }

    private static func write(_ bytes: UnsafeRawBufferPointer, to fd: Int32, at offset: UInt64) throws(RemoteError) {
        guard bytes.count > 0 else { return }
        do { try SystemCall.pwrite(fd, from: bytes.baseAddress!, count: bytes.count, at: offset) } catch {
            throw RemoteError(.io, "cannot write the partial download: \(error)")
        }
    }
}

/// What a try for a node's download lock found.
private enum LockAttempt: Sendable {
    case stored(DiskExport)
    case acquired(DownloadLock)
    case busy
}

/// Set by the part that found the header refused, read once every part has stopped.
private final class RefusalFlag: Sendable {
    let raised = Atomic<Bool>(false)
}
