import Foundation
import GRDB

extension StoreFiles {
    /// The recorded state of an interrupted download of a node's cloud file, if any (and its file still exists).
    /// A row whose file is gone (the cache folder was purged) is forgotten, unless a downloader holds the node:
    /// its row is written a moment before its file.
    @available(*, noasync)
    package func partialDownload(_ nodeID: NodeID) throws(DarkDiskError) -> PartialDownload? {
        let row = try read { db in try Row.fetchOne(db, sql: "SELECT * FROM download WHERE nodeID = ?", arguments: [nodeID.rawValue]) }
        guard let row else { return nil }
        let path = partialPath(row["partialName"])
        guard FileManager.default.fileExists(atPath: path) else {
            removeIdlePartialDownload(nodeID)
            return nil
        }
        return PartialDownload(nodeID: nodeID, etag: row["etag"], size: UInt64(row["size"] as Int64), path: path,
                               ranges: PartialDownload.parse(row["ranges"]))
    }

    /// A folder of the cache directory for a component's own files (`partial`, `downloads`), created if the
    /// cache folder was purged; a symbolic link planted there is refused, never followed.
    package func cacheSubfolder(_ name: String) throws(DarkDiskError) -> String {
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
            throw DarkDiskError(.invalidArgument, "invalid cache folder name '\(name)'")
        }
        let path = location.cacheDirectory + "/" + name
        try FileOperations.makeDirectory(path)
        return path
    }

    /// Starts recording a new download (replacing any older one, whose partial file is removed).
    @available(*, noasync)
    package func beginPartialDownload(_ nodeID: NodeID, etag: String, size: UInt64) throws(DarkDiskError) -> PartialDownload {
        try removePartialDownload(nodeID)
        let name = FileOperations.randomName(extension: "part")
        try FileOperations.makeDirectory(location.cacheDirectory + "/partial")
        try write { db in
            try db.execute(sql: "INSERT INTO download (nodeID, etag, size, partialName, ranges, bytes, lastAccess) VALUES (?, ?, ?, ?, '', 0, ?)",
                           arguments: [nodeID.rawValue, etag, Int64(size), name, clock.now.timeIntervalSince1970])
        }
        return PartialDownload(nodeID: nodeID, etag: etag, size: size, path: partialPath(name), ranges: [])
    }

    /// Records received ranges; call after the bytes are flushed to the partial file.
    @available(*, noasync)
    package func savePartialDownload(_ download: PartialDownload) throws(DarkDiskError) {
        let text = download.ranges.map { "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: ",")
        try write { db in
            try db.execute(sql: "UPDATE download SET ranges = ?, bytes = ?, lastAccess = ? WHERE nodeID = ? AND etag = ?",
                           arguments: [text, Int64(download.receivedBytes), clock.now.timeIntervalSince1970, download.nodeID.rawValue, download.etag])
        }
        // Partial downloads count against the data pool: a growing one may push it over its limit.
        kickEviction(.data)
    }

    /// The lock file a downloader of `nodeID` holds (`flock`, exclusive) while it writes the node's partial
    /// download; eviction and deletion leave a partial download alone while it is held.
    package func downloadLockPath(_ nodeID: NodeID) throws(DarkDiskError) -> String {
        try cacheSubfolder("partial") + "/" + nodeID.rawValue + ".lock"
    }

    /// Forgets a download and removes its partial file (after it completed, or to restart from zero).
    @available(*, noasync)
    package func removePartialDownload(_ nodeID: NodeID) throws(DarkDiskError) {
        // One transaction, the file removed before the row: a crash between them leaves a row whose file is
        // gone (the next download recreates it and authentication refuses the gap), never a lost file name.
        try write { db in
            if let name = try String.fetchOne(db, sql: "SELECT partialName FROM download WHERE nodeID = ?", arguments: [nodeID.rawValue]) {
                FileOperations.remove(partialPath(name))
            }
            try db.execute(sql: "DELETE FROM download WHERE nodeID = ?", arguments: [nodeID.rawValue])
        }
    }

    private func partialPath(_ name: String) -> String {
        location.cacheDirectory + "/partial/" + name
    }
}
