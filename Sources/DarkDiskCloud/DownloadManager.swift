import DarkDisk
import DarkDiskCrypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Downloads node data from the remote into the store's cache pool (the seeds' ZDCDownloadManager).
///
/// A node's cloud file is fetched in parts (`partSize`, `parallelParts` in flight) with `If-Match` on its
/// ETag; each part is flushed to a partial file and recorded in the index before it counts, so a fetch
/// interrupted by a crash, a restart or a lost connection resumes with the bytes it has. An ETag change
/// restarts from zero. Identical requests share one transfer. A finished file is authenticated (header
/// and length) before it enters the store.
public actor DownloadManager {
    public let manager: DiskManager
    public let remote: any Remote
    public let partSize: UInt64
    public let parallelParts: Int
    private var transfers: [NodeID: Task<DiskExport, any Error>] = [:]
    private var observers: [NodeID: [@Sendable (DownloadProgress) -> Void]] = [:]

    public init(manager: DiskManager, remote: any Remote, partSize: UInt64 = 8 << 20, parallelParts: Int = 4) {
        self.manager = manager
        self.remote = remote
        self.partSize = max(64 << 10, partSize)
        self.parallelParts = max(1, parallelParts)
    }

    /// The node's data, downloading it into the cache pool if it is not local. Concurrent calls for one node
    /// share one transfer; `progress` is called as parts arrive.
    public func nodeData(_ nodeID: NodeID, progress: (@Sendable (DownloadProgress) -> Void)? = nil) async throws -> DiskExport {
        if let local = try manager.nodeFile(nodeID, kind: .data) { return local }
        if let progress { observers[nodeID, default: []].append(progress) }
        if let running = transfers[nodeID] { return try await running.value }
        let task = Task { try await self.transfer(nodeID) }
        transfers[nodeID] = task
        defer {
            transfers[nodeID] = nil
            observers[nodeID] = nil
        }
        return try await task.value
    }

    private func report(_ nodeID: NodeID, _ progress: DownloadProgress) {
        for observer in observers[nodeID] ?? [] { observer(progress) }
    }

    private func transfer(_ nodeID: NodeID) async throws -> DiskExport {
        guard let entry = try manager.outlineEntry(nodeID) else {
            throw RemoteError(.notFound, "node '\(nodeID)' is not stored locally and the remote's outline does not have it (run 'darkdisk pull')")
        }
        let key = try manager.unwrapKey(entry.wrappedKey)
        let objectKey = CloudLayout.cloudFile(nodeID)
        for attempt in 0..<3 {
            guard let info = try await remote.info(objectKey) else {
                throw RemoteError(.notFound, "node '\(nodeID)' is in the outline but its cloud file is not in \(remote.url)")
            }
            var download = try manager.partialDownload(nodeID)
            if download == nil || download!.etag != info.etag || download!.size != info.size {
                download = try manager.beginPartialDownload(nodeID, etag: info.etag, size: info.size)
            }
            do {
                try await fetchMissing(&download!, key: objectKey)
            } catch let error as RemoteError where error.code == .changed && attempt < 2 {
                // The cloud file was replaced mid-download: its parts do not go together. Start over.
                try manager.removePartialDownload(nodeID)
                continue
            }
            do {
                _ = try CryptoFileReader(path: download!.path, key: key)
            } catch {
                try manager.removePartialDownload(nodeID)
                throw RemoteError(.invalidResponse, "the cloud file of node '\(nodeID)' does not authenticate: \(error)")
            }
            let export = try manager.importNodeFile(DiskImport(cryptoFile: CryptoFile(path: download!.path, format: .cloudFile, key: key)),
                                                    nodeID: nodeID, kind: .data)
            try manager.removePartialDownload(nodeID)
            return export
        }
        throw RemoteError(.changed, "node '\(nodeID)' keeps changing in the cloud while it downloads")
    }

    /// Fetches the missing parts, several at a time; each lands with `pwrite`, is flushed, then recorded.
    private func fetchMissing(_ download: inout PartialDownload, key objectKey: String) async throws {
        let fd = open(download.path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw RemoteError(.io, "cannot open \(download.path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard ftruncate(fd, off_t(download.size)) == 0 else {
            throw RemoteError(.io, "cannot size \(download.path): \(String(cString: strerror(errno)))")
        }
        let started = Date()
        let resumed = download.receivedBytes
        var pending = download.missingParts(partSize: partSize)[...]
        let etag = download.etag
        let remote = self.remote
        try await withThrowingTaskGroup(of: Range<UInt64>.self) { group in
            func startNext() {
                guard let part = pending.popFirst() else { return }
                group.addTask {
                    let data = try await remote.read(objectKey, range: part, ifMatch: etag)
                    guard UInt64(data.count) == UInt64(part.count) else {
                        throw RemoteError(.invalidResponse, "\(objectKey): \(data.count) bytes for a part of \(part.count)")
                    }
                    let written = data.withUnsafeBytes { buffer -> Bool in
                        var done = 0
                        while done < buffer.count {
                            let n = pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(part.lowerBound) + off_t(done))
                            if n < 0 { if errno == EINTR { continue }; return false }
                            done += n
                        }
                        return fdatasync(fd) == 0
                    }
                    guard written else { throw RemoteError(.io, "cannot write the partial download: \(String(cString: strerror(errno)))") }
                    return part
                }
            }
            for _ in 0..<parallelParts { startNext() }
            while let part = try await group.next() {
                download.add(part)
                try manager.savePartialDownload(download)
                let elapsed = max(Date().timeIntervalSince(started), 0.001)
                report(download.nodeID, DownloadProgress(completedBytes: download.receivedBytes, totalBytes: download.size,
                                                         resumedBytes: resumed,
                                                         throughput: Double(download.receivedBytes - resumed) / elapsed))
                startNext()
            }
        }
    }
}
