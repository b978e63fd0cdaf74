import DarkDiskStore
import DarkDiskTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Partial downloads are part of the data pool. They count in its size and `status`,
/// are evicted with its cache files least recently touched first (never while a downloader holds one), go
/// with their node, and a partial file no row names is swept.
@Suite struct PartialDownloadPoolTests {
    /// A partial download of `id` that received `bytes` bytes.
    @discardableResult
    private func partial(_ manager: DiskManager, _ id: String, bytes: Int) throws -> PartialDownload {
        var download = try manager.files.beginPartialDownload(NodeID(id), etag: "\"e\"", size: UInt64(bytes) * 2)
        try TemporaryStore.bytes(bytes, seed: 9).write(to: URL(fileURLWithPath: download.path))
        download.add(0..<UInt64(bytes))
        try manager.files.savePartialDownload(download)
        return download
    }

    @Test func partialDownloadsCountAndGoLeastRecentlyTouchedFirst() throws {
        let store = try TemporaryStore()
        let clock = ManualClock()
        let manager = try store.create(clock: clock)
        let old = try partial(manager, "old-partial", bytes: 200_000)
        clock.advance(by: 10)
        try manager.importNodeFile(DiskImport(cleartextData: TemporaryStore.bytes(200_000)), nodeID: NodeID("cached"))
        clock.advance(by: 10)
        let recent = try partial(manager, "recent-partial", bytes: 200_000)
        clock.advance(by: 10)
        let busy = try partial(manager, "busy-partial", bytes: 100_000)

        let data = try #require(try manager.files.status().first { $0.pool == .data })
        #expect(data.partialCount == 3 && data.partialSize == 500_000)
        #expect(data.size == data.cachedSize + 500_000, "they count in the pool's size")
        #expect(try manager.files.storageSize(of: .data) == data.size)

        // A downloader holds one: it is never evicted.
        let lock = open(try manager.files.downloadLockPath(NodeID("busy-partial")), O_RDWR | O_CREAT, 0o600)
        #expect(lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) == 0)
        defer { close(lock) }

        // Room for about two of the four: the oldest partial goes first, then the cache file.
        try manager.files.setMaxSize(data.size - 150_000, for: .data)
        try manager.files.enforceLimits(of: .data)
        #expect(try manager.files.partialDownload(NodeID("old-partial")) == nil && !FileManager.default.fileExists(atPath: old.path))
        #expect(try manager.files.storedFile(NodeID("cached")) != nil, "the cache file, touched later, stays")
        try manager.files.setMaxSize(data.size - 350_000, for: .data)
        try manager.files.enforceLimits(of: .data)
        #expect(try manager.files.storedFile(NodeID("cached")) == nil)
        #expect(try manager.files.partialDownload(NodeID("recent-partial")) != nil, "touched after the cache file: still there")
        try manager.files.setMaxSize(0, for: .data)
        try manager.files.enforceLimits(of: .data)
        #expect(try manager.files.partialDownload(NodeID("recent-partial")) == nil && !FileManager.default.fileExists(atPath: recent.path))
        #expect(try manager.files.partialDownload(NodeID("busy-partial")) != nil && FileManager.default.fileExists(atPath: busy.path),
                "a partial download a downloader holds stays")
        let after = try #require(try manager.files.status().first { $0.pool == .data })
        #expect(after.partialCount == 1 && after.partialSize == 100_000)
    }

    @Test func partialDownloadsGoWithTheirNodeAndOrphansAreSwept() throws {
        let store = try TemporaryStore()
        let clock = ManualClock()
        let manager = try store.create(clock: clock)
        let dropped = try partial(manager, "dropped", bytes: 50_000)
        let forgotten = try partial(manager, "forgotten", bytes: 50_000)
        try manager.deleteLocalFiles(of: NodeID("dropped"))
        try manager.deleteNode(NodeID("forgotten"))
        #expect(try manager.files.partialDownload(NodeID("dropped")) == nil && !FileManager.default.fileExists(atPath: dropped.path))
        #expect(try manager.files.partialDownload(NodeID("forgotten")) == nil && !FileManager.default.fileExists(atPath: forgotten.path))

        // A partial file no row names (a crash between creating and recording it), untouched for ten minutes.
        let folder = try manager.files.cacheSubfolder("partial")
        let orphan = folder + "/0123456789abcdef.part"
        try Data("left behind".utf8).write(to: URL(fileURLWithPath: orphan))
        clock.advance(by: 601)
        let reopened = try store.open(clock: clock)
        // The sweep runs in the background after the open: wait for it, not for a time (under ThreadSanitizer
        // on a busy machine it came after 30 s).
        reopened.files.waitForMaintenance()
        #expect(!FileManager.default.fileExists(atPath: orphan), "the orphan sweep at open removes it")
    }
    /// A downloader records its partial download a moment before it creates the file. Asking for the partial
    /// download in between (the mount's `user.darkdisk.local`, polled by a user) took the row for a purged
    /// file's and removed it, and with it the file the downloader had just made: the download failed with
    /// "cannot open …part: No such file or directory" and waited out its backoff (seen in a full test run).
    @Test func askingDuringADownloadersStartForgetsNothing() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let id = try NodeID("starting")
        let lock = open(try manager.files.downloadLockPath(id), O_RDWR | O_CREAT, 0o600)
        #expect(lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) == 0)
        let download = try manager.files.beginPartialDownload(id, etag: "\"e\"", size: 1000)
        #expect(try manager.files.partialDownload(id) == nil, "no file yet")
        #expect(FileManager.default.createFile(atPath: download.path, contents: Data(count: 1000)))
        #expect(try manager.files.partialDownload(id)?.path == download.path, "the downloader's row is still there")
        #expect(FileManager.default.fileExists(atPath: download.path))

        // With nobody holding the node, a row whose file is gone is forgotten (a purged cache folder).
        close(lock)
        try FileManager.default.removeItem(atPath: download.path)
        #expect(try manager.files.partialDownload(id) == nil)
        #expect(try manager.files.partialDownloadUsage().files == 0)

        // And so is one whose whole folder went with the cache folder (no lock file can be made there).
        let other = try manager.files.beginPartialDownload(try NodeID("purged"), etag: "\"e\"", size: 1000)
        try FileManager.default.removeItem(atPath: URL(fileURLWithPath: other.path).deletingLastPathComponent().path)
        #expect(try manager.files.partialDownload(try NodeID("purged")) == nil)
        #expect(try manager.files.partialDownloadUsage().files == 0, "its bytes no longer count in the pool")
    }
}
