import DarkDiskCrypto
import Foundation
import GRDB

/// What the store keeps of the bucket's records: the generation of each record applied (a lower one is a
/// rollback), the outline's fingerprint made of them, and the remote objects `gc` found no record naming.
extension DiskManager {
    /// The highest generation of node `nodeID`'s record this store has applied (0: none), even if the node
    /// has gone since: a record of a lower generation is a rollback.
    public func recordGeneration(of nodeID: NodeID) throws(DarkDiskError) -> UInt64 {
        try read { db in
            UInt64(max(0, try Int64.fetchOne(db, sql: "SELECT generation FROM recordGeneration WHERE nodeID = ?", arguments: [nodeID.rawValue]) ?? 0))
        }
    }

    /// `recordGeneration(of:)` of every node that has one, in one read (a pull or a check of a whole bucket).
    public func recordGenerations() throws(DarkDiskError) -> [NodeID: UInt64] {
        try read { db in
            var generations: [NodeID: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT nodeID, generation FROM recordGeneration") {
                guard let id = try? NodeID(row["nodeID"] as String) else { continue }
                generations[id] = UInt64(max(0, row["generation"] as Int64))
            }
            return generations
        }
    }

    /// The fingerprint of the outline as this store last pulled or pushed it (its records' generations), and
    /// how many nodes it covers: what another machine's first pull can be checked against.
    public func outlineFingerprint() throws(DarkDiskError) -> (fingerprint: String, nodes: Int) {
        let generations = try recordGenerations().filter { $0.value > 0 }
        return (keys.outlineFingerprint(of: generations), generations.count)
    }

    /// Whether `text` has the form of an outline fingerprint ("dd1-" and 32 hex digits).
    public static func isOutlineFingerprint(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("dd1-") && lowered.count == 36 && Hex.decode(String(lowered.dropFirst(4))) != nil
    }

    /// Remembers that records of these generations were applied (a generation never goes down).
    public func noteRecordGenerations(_ generations: [NodeID: UInt64]) throws(DarkDiskError) {
        guard !generations.isEmpty else { return }
        try write { db in
            for (node, generation) in generations {
                try db.execute(sql: """
                    INSERT INTO recordGeneration (nodeID, generation) VALUES (?, ?)
                    ON CONFLICT(nodeID) DO UPDATE SET generation = MAX(generation, excluded.generation)
                    """, arguments: [node.rawValue, Int64(clamping: generation)])
            }
        }
    }

    /// Notes the remote objects `gc` found that no record names, and returns since when each has been seen
    /// so (now, for one seen for the first time); objects no longer among them are forgotten.
    public func remoteGarbage(_ unnamed: Set<String>) throws(DarkDiskError) -> [String: Date] {
        let now = clock.now.timeIntervalSince1970
        return try write { db in
            var since: [String: Date] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT key, since FROM remoteGarbage") {
                let key: String = row["key"]
                if unnamed.contains(key) {
                    since[key] = Date(timeIntervalSince1970: row["since"])
                } else {
                    try db.execute(sql: "DELETE FROM remoteGarbage WHERE key = ?", arguments: [key])
                }
            }
            for key in unnamed where since[key] == nil {
                try db.execute(sql: "INSERT INTO remoteGarbage (key, since) VALUES (?, ?)", arguments: [key, now])
                since[key] = Date(timeIntervalSince1970: now)
            }
            return since
        }
    }

    /// Forgets remote objects `gc` deleted.
    public func forgetRemoteGarbage(_ keys: [String]) throws(DarkDiskError) {
        try write { db in
            for key in keys { try db.execute(sql: "DELETE FROM remoteGarbage WHERE key = ?", arguments: [key]) }
        }
    }
}
