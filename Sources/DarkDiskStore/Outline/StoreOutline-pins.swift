import Foundation
import GRDB

/// Pins: "always keep on this device". A node's pin is its own setting if it has one, else the
/// nearest folder's above it, else the top's (unpinned unless set). A pinned file's data is kept local and
/// persistent: the mount's `PinKeeper` downloads what is missing, again when the remote copy changes, and
/// resumes after a restart; unpinning moves the files back to the cache pool.
extension StoreOutline {
    /// The pin set on `nodeID` itself (nil: the top of the tree); nil when it has none and inherits.
    public func pinSetting(_ nodeID: NodeID?) throws(DarkDiskError) -> Bool? {
        try read { db in try Bool.fetchOne(db, sql: "SELECT pinned FROM pin WHERE nodeID = ?", arguments: [nodeID?.rawValue ?? ""]) }
    }

    /// Whether `nodeID` is pinned now: its own setting, or the nearest one above it, or the top's.
    public func isPinned(_ nodeID: NodeID) throws(DarkDiskError) -> Bool {
        try read { db in try PinSettings.isPinned(db, nodeID) }
    }

    /// Sets `nodeID`'s own pin (nil: the top's), or clears it (`pinned` nil: inherit). `clearingBelow`: every
    /// node below it loses its own setting too, so the whole folder follows this one. Files that are no
    /// longer pinned, uploaded and persistent move to the cache pool at once (never one whose change still
    /// waits for its upload); what becomes pinned is fetched by the mount's keeper.
    public func setPin(_ pinned: Bool?, on nodeID: NodeID?, clearingBelow: Bool = false) throws(DarkDiskError) {
        let key = nodeID?.rawValue ?? ""
        let now = clock.now.timeIntervalSince1970
        try write { db in
            if let nodeID {
                guard try Bool.fetchOne(db, sql: "SELECT 1 FROM node WHERE id = ?", arguments: [nodeID.rawValue]) == true else {
                    throw DarkDiskError(.notFound, "node \(nodeID) is not in this store")
                }
            }
            if clearingBelow, nodeID == nil {
                try db.execute(sql: "DELETE FROM pin WHERE nodeID != ''")
            } else if clearingBelow {
                try db.execute(sql: """
                    WITH RECURSIVE below(id) AS (
                      SELECT id FROM node WHERE parentID = ?
                      UNION SELECT node.id FROM below JOIN node ON node.parentID = below.id)
                    DELETE FROM pin WHERE nodeID IN (SELECT id FROM below)
                    """, arguments: [key])
            }
            if let pinned {
                try db.execute(sql: """
                    INSERT INTO pin (nodeID, pinned, since) VALUES (?, ?, ?)
                    ON CONFLICT(nodeID) DO UPDATE SET pinned = excluded.pinned, since = excluded.since
                    """, arguments: [key, pinned, now])
            } else {
                try db.execute(sql: "DELETE FROM pin WHERE nodeID = ?", arguments: [key])
            }
        }
        try releaseUnpinned(below: nodeID)
    }

    /// Moves to the cache pool the persistent data of the nodes at and below `nodeID` (nil: all) that are not
    /// pinned, are in the remote, and have no change waiting for its upload.
    private func releaseUnpinned(below nodeID: NodeID?) throws(DarkDiskError) {
        let candidates = try read { db in
            try String.fetchAll(db, sql: """
                WITH RECURSIVE below(id) AS (
                  SELECT \(nodeID == nil ? "id FROM node" : "?")
                  UNION SELECT node.id FROM below JOIN node ON node.parentID = below.id)
                SELECT below.id FROM below JOIN file ON file.ownerID = below.id AND file.kind = 'data' AND file.mode = 'persistent'
                  JOIN node ON node.id = below.id AND node.cloudETag IS NOT NULL
                WHERE below.id NOT IN (SELECT nodeID FROM uploadQueue)
                """, arguments: nodeID.map { [$0.rawValue] } ?? [])
            .compactMap { try? NodeID($0) }
            .filter { try !PinSettings.isPinned(db, $0) }
        }
        for id in candidates { try files.makeNodeFilePersistent(false, nodeID: id, kind: .data) }
    }

    /// The pin clock: it changes whenever a pin is set or cleared, in any process.
    package func pinClock() throws(DarkDiskError) -> Int64 {
        try read { db in try Int64.fetchOne(db, sql: "SELECT version FROM pinClock") ?? 0 }
    }

    /// A pinned node whose data is not kept as a pin asks: not stored (`stored` false: to download, `size`
    /// bytes), or stored in the cache pool (to make persistent).
    package struct PinnedNode: Sendable, Equatable {
        package let nodeID: NodeID
        package let stored: Bool
        package let size: UInt64
        /// Whether it is kept persistently once here (always, for a pin).
        package let persistent: Bool

        package init(nodeID: NodeID, stored: Bool, size: UInt64, persistent: Bool = true) {
            self.nodeID = nodeID
            self.stored = stored
            self.size = size
            self.persistent = persistent
        }
    }

    /// The pinned nodes in the remote whose data is not stored persistently here, in the outline's order.
    /// Cheap when nothing is pinned (one read); otherwise it walks the pinned folders.
    @available(*, noasync)
    package func pinnedNodesToKeep() throws(DarkDiskError) -> [PinnedNode] {
        try read { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM pin WHERE pinned = 1 LIMIT 1") == true else { return [] }
            let topPinned = try Bool.fetchOne(db, sql: "SELECT pinned FROM pin WHERE nodeID = ''") ?? false
            return try Row.fetchAll(db, sql: """
                WITH RECURSIVE pinned(id) AS (
                  SELECT nodeID FROM pin WHERE pinned = 1 AND nodeID != ''
                  UNION
                  SELECT id FROM node AS top WHERE ? AND (top.parentID IS NULL
                      OR NOT EXISTS (SELECT 1 FROM node AS parent WHERE parent.id = top.parentID AND parent.type = 'folder'))
                    AND NOT EXISTS (SELECT 1 FROM pin WHERE pin.nodeID = top.id AND pin.pinned = 0)
                  UNION
                  SELECT child.id FROM pinned JOIN node AS child ON child.parentID = pinned.id
                    WHERE NOT EXISTS (SELECT 1 FROM pin WHERE pin.nodeID = child.id AND pin.pinned = 0))
                SELECT node.id, node.dataSize, file.mode FROM pinned JOIN node ON node.id = pinned.id
                  LEFT JOIN file ON file.ownerID = node.id AND file.kind = 'data'
                WHERE node.cloudETag IS NOT NULL AND (node.type IS NULL OR node.type = 'file')
                  AND (file.mode IS NULL AND node.dataSize > 0 OR file.mode = 'cache')
                ORDER BY node.id
                """, arguments: [topPinned]).compactMap { row in
                    guard let id = try? NodeID(row["id"] as String) else { return nil }
                    let mode: String? = row["mode"]
                    return PinnedNode(nodeID: id, stored: mode != nil, size: UInt64(max(0, row["dataSize"] as Int64)))
                }
        }
    }

    /// Drops the local copy of node `nodeID`'s data at once (persistent or not, and any partial download), so
    /// that it is only in the remote again; returns whether anything was here. Refused (`busy`, nothing
    /// dropped) for a node whose change waits for its upload or that the remote does not have, which would be
    /// lost, and for a pinned node, which the mount would fetch again.
    @discardableResult
    public func evictNodeData(_ nodeID: NodeID) throws(DarkDiskError) -> Bool {
        try read { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM node WHERE id = ?", arguments: [nodeID.rawValue]) == true else {
                throw DarkDiskError(.notFound, "node \(nodeID) is not in this store")
            }
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM uploadQueue WHERE nodeID = ?", arguments: [nodeID.rawValue]) == true {
                throw DarkDiskError(.busy, "node \(nodeID) has a change that is not uploaded yet; it stays")
            }
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM node WHERE id = ? AND cloudETag IS NOT NULL", arguments: [nodeID.rawValue]) == true else {
                throw DarkDiskError(.busy, "node \(nodeID) is not in the remote yet; it stays")
            }
            if try PinSettings.isPinned(db, nodeID) { throw DarkDiskError(.busy, "node \(nodeID) is pinned; unpin it first") }
        }
        let hadPartial = try files.partialDownload(nodeID) != nil
        let deleted = try files.deleteNodeFiles([nodeID], kind: .data) > 0
        files.removeIdlePartialDownload(nodeID)
        return deleted || hadPartial
    }

    /// Hands the download of node `nodeID`'s data to the running mount (`darkdisk fetch --background`): it
    /// downloads it (`persistent`: to keep) and forgets the request, also after a restart.
    package func requestDownload(_ nodeID: NodeID, persistent: Bool) throws(DarkDiskError) {
        let now = clock.now.timeIntervalSince1970
        try write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM node WHERE id = ? AND cloudETag IS NOT NULL", arguments: [nodeID.rawValue]) == true else {
                throw DarkDiskError(.notFound, "node \(nodeID) is not in the remote's outline")
            }
            try db.execute(sql: """
                INSERT INTO wantedDownload (nodeID, persistent, since) VALUES (?, ?, ?)
                ON CONFLICT(nodeID) DO UPDATE SET persistent = MAX(persistent, excluded.persistent)
                """, arguments: [nodeID.rawValue, persistent, now])
        }
    }

    /// The downloads handed to the mount and not done yet, oldest first.
    @available(*, noasync)
    package func wantedDownloads() throws(DarkDiskError) -> [(nodeID: NodeID, persistent: Bool)] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT nodeID, persistent FROM wantedDownload ORDER BY since, nodeID").compactMap { row in
                (try? NodeID(row["nodeID"] as String)).map { ($0, row["persistent"] as Bool) }
            }
        }
    }

    /// A handed download is done (or its node is gone).
    @available(*, noasync)
    package func forgetWantedDownload(_ nodeID: NodeID) throws(DarkDiskError) {
        try write { db in try db.execute(sql: "DELETE FROM wantedDownload WHERE nodeID = ?", arguments: [nodeID.rawValue]) }
    }
}
