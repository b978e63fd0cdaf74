import DarkDiskCrypto
import Foundation
import GRDB

/// What the store keeps of the bucket's records: the generation of each node's record it has applied (a
/// record of a lower generation is a rollback, refused), the outline's fingerprint made of them, and the
/// remote objects `gc` found that no record names (deleted after a grace period). Each call has a
/// synchronous form, unavailable from async code, and an async form that blocks no thread of Swift's pool.
package final class RecordLedger: Sendable {
    private let index: StoreIndex
    private let keys: StoreKeys
    private let clock: any StoreClock

    init(index: StoreIndex, keys: StoreKeys, clock: any StoreClock) {
        self.index = index
        self.keys = keys
        self.clock = clock
    }

    /// The highest generation of node `nodeID`'s record this store has applied (0: none), even if the node
    /// has gone since: a record of a lower generation is a rollback.
    @available(*, noasync)
    package func generation(of nodeID: NodeID) throws(DarkDiskError) -> UInt64 {
        try index.read { db in try Self.generation(db, of: nodeID) }
    }

    package func generation(of nodeID: NodeID) async throws(DarkDiskError) -> UInt64 {
        try await index.read { db in try Self.generation(db, of: nodeID) }
    }

    private static func generation(_ db: Database, of nodeID: NodeID) throws -> UInt64 {
        UInt64(max(0, try Int64.fetchOne(db, sql: "SELECT generation FROM recordGeneration WHERE nodeID = ?", arguments: [nodeID.rawValue]) ?? 0))
    }

    /// `generation(of:)` of every node that has one, in one read (a pull or a check of a whole bucket).
    @available(*, noasync)
    package func generations() throws(DarkDiskError) -> [NodeID: UInt64] {
        try index.read(Self.generations)
    }

    package func generations() async throws(DarkDiskError) -> [NodeID: UInt64] {
        try await index.read(Self.generations)
    }

    private static func generations(_ db: Database) throws -> [NodeID: UInt64] {
        var generations: [NodeID: UInt64] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT nodeID, generation FROM recordGeneration") {
            guard let id = try? NodeID(row["nodeID"] as String) else { continue }
            generations[id] = UInt64(max(0, row["generation"] as Int64))
        }
        return generations
    }

    /// Remembers that records of these generations were applied (a generation never goes down).
    @available(*, noasync)
    package func note(_ generations: [NodeID: UInt64]) throws(DarkDiskError) {
        guard !generations.isEmpty else { return }
        try index.write { db in try Self.note(db, generations) }
    }

    package func note(_ generations: [NodeID: UInt64]) async throws(DarkDiskError) {
        guard !generations.isEmpty else { return }
        try await index.write { db in try Self.note(db, generations) }
    }

    private static func note(_ db: Database, _ generations: [NodeID: UInt64]) throws {
        for (node, generation) in generations {
            try db.execute(sql: """
                INSERT INTO recordGeneration (nodeID, generation) VALUES (?, ?)
                ON CONFLICT(nodeID) DO UPDATE SET generation = MAX(generation, excluded.generation)
                """, arguments: [node.rawValue, Int64(clamping: generation)])
        }
    }

    /// The fingerprint of the outline as this store last pulled or pushed it (its records' generations), and
    /// how many nodes it covers: what another machine's first pull can be checked against.
    @available(*, noasync)
    package func fingerprint() throws(DarkDiskError) -> (fingerprint: String, nodes: Int) {
        fingerprint(of: try generations())
    }

    package func fingerprint() async throws(DarkDiskError) -> (fingerprint: String, nodes: Int) {
        fingerprint(of: try await generations())
    }

    private func fingerprint(of all: [NodeID: UInt64]) -> (fingerprint: String, nodes: Int) {
        let generations = all.filter { $0.value > 0 }
        return (keys.outlineFingerprint(of: generations), generations.count)
    }

    /// Whether `text` has the form of an outline fingerprint ("dd1-" and 32 hex digits).
    package static func isFingerprint(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("dd1-") && lowered.count == 36 && Hex.decode(String(lowered.dropFirst(4))) != nil
    }

    /// Notes the remote objects `gc` found that no record names, and returns since when each has been seen
    /// so (now, for one seen for the first time); objects no longer among them are forgotten.
    @available(*, noasync)
    package func garbage(_ unnamed: Set<String>) throws(DarkDiskError) -> [String: Date] {
        let now = clock.now.timeIntervalSince1970
        return try index.write { db in try Self.garbage(db, unnamed, now: now) }
    }

    package func garbage(_ unnamed: Set<String>) async throws(DarkDiskError) -> [String: Date] {
        let now = clock.now.timeIntervalSince1970
        return try await index.write { db in try Self.garbage(db, unnamed, now: now) }
    }

    private static func garbage(_ db: Database, _ unnamed: Set<String>, now: Double) throws -> [String: Date] {
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

    /// Forgets remote objects `gc` deleted.
    @available(*, noasync)
    package func forgetGarbage(_ keys: [String]) throws(DarkDiskError) {
        try index.write { db in try Self.forgetGarbage(db, keys) }
    }

    package func forgetGarbage(_ keys: [String]) async throws(DarkDiskError) {
        try await index.write { db in try Self.forgetGarbage(db, keys) }
    }

    private static func forgetGarbage(_ db: Database, _ keys: [String]) throws {
        for key in keys { try db.execute(sql: "DELETE FROM remoteGarbage WHERE key = ?", arguments: [key]) }
    }
}
