import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

/// The upload queue: local changes meant for the remote, kept in the index so they survive a restart or
/// `kill -9`. A queued node's files are never evicted nor expired (they may be the only copy). Any process
/// may upload; a row is claimed by one process at a time, and a claim of a process that died is taken over.
/// Edits that queue a change in their own transaction (a drive commit, a rename) use `add(_:_:...)` with
/// their `Database`, so a pull or an upload never sees the one without the other. Each call has a
/// synchronous form, unavailable from async code, and an async form that blocks no thread of Swift's pool.
public final class UploadQueue: Sendable {
    private let index: StoreIndex
    private let clock: any StoreClock

    init(index: StoreIndex, clock: any StoreClock) {
        self.index = index
        self.clock = clock
    }

    // Each call has a synchronous form for threads that may block, unavailable from async code, and an
    // async one, which runs on GRDB's queues (the compiler picks it with `await`).

    /// Queues the node's stored files for upload, with the name and parent its record gets (nil: as the
    /// outline has them). Queuing a node that is already queued replaces that change with this one.
    @available(*, noasync)
    package func add(_ nodeID: NodeID, name: String? = nil, parentID: String? = nil) throws(DarkDiskError) {
        let now = clock.now.timeIntervalSince1970
        try index.write { db in try Self.add(db, nodeID, .content, name: name, parentID: parentID, now: now) }
    }

    package func add(_ nodeID: NodeID, name: String? = nil, parentID: String? = nil) async throws(DarkDiskError) {
        let now = clock.now.timeIntervalSince1970
        try await index.write { db in try Self.add(db, nodeID, .content, name: name, parentID: parentID, now: now) }
    }

    /// Queues a change of the node's record alone (`QueuedUpload.Operation.record`): the name and parent it
    /// gets (nil: as the outline has them) and the attributes the index holds for it when it is uploaded. A
    /// queued content change stays one (it writes the record too), with this name and parent.
    @available(*, noasync)
    package func addRecordChange(_ nodeID: NodeID, name: String? = nil, parentID: String? = nil) throws(DarkDiskError) {
        let now = clock.now.timeIntervalSince1970
        try index.write { db in try Self.add(db, nodeID, .record, name: name, parentID: parentID, now: now) }
    }

    package func addRecordChange(_ nodeID: NodeID, name: String? = nil, parentID: String? = nil) async throws(DarkDiskError) {
        let now = clock.now.timeIntervalSince1970
        try await index.write { db in try Self.add(db, nodeID, .record, name: name, parentID: parentID, now: now) }
    }

    /// Queues the node's deletion everywhere (`QueuedUpload.Operation.delete`), in place of any change queued.
    @available(*, noasync)
    package func addDelete(_ nodeID: NodeID) throws(DarkDiskError) {
        let now = clock.now.timeIntervalSince1970
        try index.write { db in try Self.add(db, nodeID, .delete, name: nil, parentID: nil, now: now) }
    }

    package func addDelete(_ nodeID: NodeID) async throws(DarkDiskError) {
        let now = clock.now.timeIntervalSince1970
        try await index.write { db in try Self.add(db, nodeID, .delete, name: nil, parentID: nil, now: now) }
    }

    /// Inserts or replaces the node's queued change within a transaction. A record change keeps a queued
    /// content change one (it writes the record too); a content change or a delete replaces what was queued.
    static func add(_ db: Database, _ nodeID: NodeID, _ new: QueuedUpload.Operation, name: String?, parentID: String?, now: Double) throws {
        let operation = switch new {
        case .record: "CASE WHEN operation = 'content' THEN 'content' ELSE 'record' END"
        default: "'\(new.rawValue)'"
        }
        // A name or folder given is the node's here at once (the drive shows it; the upload writes it).
        if let name { try db.execute(sql: "UPDATE node SET name = ? WHERE id = ?", arguments: [name, nodeID.rawValue]) }
        if let parentID { try db.execute(sql: "UPDATE node SET parentID = ? WHERE id = ?", arguments: [parentID, nodeID.rawValue]) }
        let sequence = (try Int64.fetchOne(db.cachedStatement(sql: "SELECT MAX(sequence) FROM uploadQueue")) ?? 0) + 1
        try db.cachedStatement(sql: """
            INSERT INTO uploadQueue (nodeID, name, parentID, queuedAt, state, sequence, operation, basedOn)
            VALUES (?, ?, ?, ?, 'pending', ?, ?, (SELECT cloudVersion FROM node WHERE id = ?1))
            ON CONFLICT(nodeID) DO UPDATE SET name = excluded.name, parentID = excluded.parentID, queuedAt = excluded.queuedAt,
              sequence = excluded.sequence, state = CASE WHEN state = 'uploading' THEN state ELSE 'pending' END,
              attempts = 0, lastError = NULL, operation = \(operation)
            """).execute(arguments: [nodeID.rawValue, name, parentID, now, sequence, new.rawValue])
    }

    /// Every queued change, oldest first.
    @available(*, noasync)
    public func all() throws(DarkDiskError) -> [QueuedUpload] {
        try index.read(Self.all)
    }

    public func all() async throws(DarkDiskError) -> [QueuedUpload] {
        try await index.read(Self.all)
    }

    private static func all(_ db: Database) throws -> [QueuedUpload] {
        try Row.fetchAll(db, sql: "SELECT * FROM uploadQueue ORDER BY queuedAt, sequence").compactMap(queued(from:))
    }

    /// The queue in brief: changes and the bytes of their data (plaintext, content changes only) by state,
    /// and the first `named` changes in queue order with their names (one read, whatever the length).
    @available(*, noasync)
    public func summary(named: Int) throws(DarkDiskError) -> UploadQueueSummary {
        try index.read { db in try Self.summary(db, named: named) }
    }

    public func summary(named: Int) async throws(DarkDiskError) -> UploadQueueSummary {
        try await index.read { db in try Self.summary(db, named: named) }
    }

    private static func summary(_ db: Database, named: Int) throws -> UploadQueueSummary {
        var summary = UploadQueueSummary()
        for row in try Row.fetchAll(db, sql: """
            SELECT q.state, COUNT(*), COALESCE(SUM(f.plaintextSize), 0) FROM uploadQueue AS q
            LEFT JOIN file AS f ON f.ownerID = q.nodeID AND f.kind = 'data' AND q.operation = 'content'
            GROUP BY q.state
            """) {
            guard let state = QueuedUpload.State(rawValue: row[0]) else { continue }
            summary.counts[state] = row[1]
            summary.bytes[state] = UInt64(max(0, row[2] as Int64))
        }
        summary.first = try Row.fetchAll(db, sql: """
            SELECT q.*, n.name AS nodeName FROM uploadQueue AS q LEFT JOIN node AS n ON n.id = q.nodeID
            ORDER BY q.queuedAt, q.sequence LIMIT ?
            """, arguments: [named]).compactMap { row in queued(from: row).map { ($0, row["nodeName"] ?? row["name"]) } }
        return summary
    }

    /// Whether a queued change that has rested since `rested` is free to upload: not being uploaded by a
    /// running process. The uploader asks this every second; it reads no row it does not need, so a queue of
    /// thousands of changes written a moment ago (a `tar x`) costs a scan, not thousands of decoded rows.
    @available(*, noasync)
    package func hasChangesToStart(restedSince rested: Date) throws(DarkDiskError) -> Bool {
        try index.read { db in try Self.hasChangesToStart(db, restedSince: rested) }
    }

    package func hasChangesToStart(restedSince rested: Date) async throws(DarkDiskError) -> Bool {
        try await index.read { db in try Self.hasChangesToStart(db, restedSince: rested) }
    }

    private static func hasChangesToStart(_ db: Database, restedSince rested: Date) throws -> Bool {
        let time = rested.timeIntervalSince1970
        if try Bool.fetchOne(db, sql: "SELECT 1 FROM uploadQueue WHERE queuedAt <= ? AND state != 'uploading' LIMIT 1", arguments: [time]) == true {
            return true
        }
        let claimers = try Int64?.fetchAll(db, sql: "SELECT DISTINCT claimedBy FROM uploadQueue WHERE queuedAt <= ? AND state = 'uploading'", arguments: [time])
        return claimers.contains { claimer in claimer.map { !isRunning(Int32(truncatingIfNeeded: $0)) } ?? true }
    }

    /// When the queue's latest change was made, and since when its oldest pending change has waited (not a
    /// failed one, which is tried again with its backoff, nor one being uploaded); nil for an empty queue.
    /// Two reads of the queue's order index, whatever its length: the uploader asks it every second, and
    /// between two uploads, to tell whether the drive is busy writing.
    @available(*, noasync)
    public func times() throws(DarkDiskError) -> UploadQueueTimes? {
        try index.read(Self.times)
    }

    public func times() async throws(DarkDiskError) -> UploadQueueTimes? {
        try await index.read(Self.times)
    }

    private static func times(_ db: Database) throws -> UploadQueueTimes? {
        guard let newest = try Double.fetchOne(db.cachedStatement(sql: "SELECT queuedAt FROM uploadQueue ORDER BY sequence DESC LIMIT 1")) else {
            return nil
        }
        let oldest = try Double.fetchOne(db.cachedStatement(sql: """
            SELECT queuedAt FROM uploadQueue WHERE state = 'pending' ORDER BY sequence LIMIT 1
            """))
        return UploadQueueTimes(newestChange: Date(timeIntervalSince1970: newest),
                                oldestWaiting: oldest.map { Date(timeIntervalSince1970: $0) })
    }

    /// The node's queued change, if any.
    @available(*, noasync)
    public func change(of nodeID: NodeID) throws(DarkDiskError) -> QueuedUpload? {
        try index.read { db in try Self.change(db, of: nodeID) }
    }

    public func change(of nodeID: NodeID) async throws(DarkDiskError) -> QueuedUpload? {
        try await index.read { db in try Self.change(db, of: nodeID) }
    }

    private static func change(_ db: Database, of nodeID: NodeID) throws -> QueuedUpload? {
        try Row.fetchOne(db, sql: "SELECT * FROM uploadQueue WHERE nodeID = ?", arguments: [nodeID.rawValue]).flatMap(queued(from:))
    }

    /// Claims the node's queued change for process `me` (this one unless said otherwise): one that is pending
    /// or failed, or that a process which is no longer running was uploading. Nil if there is none, or
    /// another live process has it.
    @available(*, noasync)
    package func claim(_ nodeID: NodeID, for me: Int32 = getpid()) throws(DarkDiskError) -> QueuedUpload? {
        try index.write { db in try Self.claim(db, nodeID, for: me) }
    }

    package func claim(_ nodeID: NodeID, for me: Int32 = getpid()) async throws(DarkDiskError) -> QueuedUpload? {
        try await index.write { db in try Self.claim(db, nodeID, for: me) }
    }

    private static func claim(_ db: Database, _ nodeID: NodeID, for me: Int32) throws -> QueuedUpload? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM uploadQueue WHERE nodeID = ?", arguments: [nodeID.rawValue]),
              let queued = queued(from: row) else { return nil }
        if queued.state == .uploading, let owner = queued.claimedBy, owner != me, isRunning(owner) { return nil }
        try db.execute(sql: "UPDATE uploadQueue SET state = 'uploading', claimedBy = ? WHERE nodeID = ?",
                       arguments: [me, nodeID.rawValue])
        return Self.queued(from: try Row.fetchOne(db, sql: "SELECT * FROM uploadQueue WHERE nodeID = ?", arguments: [nodeID.rawValue])!)
    }

    /// Remembers the cloud file version a claimed upload is writing, before it writes its record.
    @available(*, noasync)
    package func noteVersion(_ nodeID: NodeID, version: String) throws(DarkDiskError) {
        try index.write { db in try Self.noteVersion(db, nodeID, version: version) }
    }

    package func noteVersion(_ nodeID: NodeID, version: String) async throws(DarkDiskError) {
        try await index.write { db in try Self.noteVersion(db, nodeID, version: version) }
    }

    private static func noteVersion(_ db: Database, _ nodeID: NodeID, version: String) throws {
        try db.execute(sql: "UPDATE uploadQueue SET version = ? WHERE nodeID = ?", arguments: [version, nodeID.rawValue])
    }

    /// The change `sequence` reached the remote: its row goes, unless a newer change was queued meanwhile
    /// (that one stays pending).
    @available(*, noasync)
    package func finish(_ nodeID: NodeID, sequence: Int64) throws(DarkDiskError) {
        try index.write { db in try Self.finish(db, nodeID, sequence: sequence) }
    }

    package func finish(_ nodeID: NodeID, sequence: Int64) async throws(DarkDiskError) {
        try await index.write { db in try Self.finish(db, nodeID, sequence: sequence) }
    }

    private static func finish(_ db: Database, _ nodeID: NodeID, sequence: Int64) throws {
        try db.execute(sql: "DELETE FROM uploadQueue WHERE nodeID = ? AND sequence = ?", arguments: [nodeID.rawValue, sequence])
        // A newer change stays, made on the version just uploaded.
        try db.execute(sql: "UPDATE uploadQueue SET state = 'pending', claimedBy = NULL, basedOn = COALESCE(version, basedOn), version = NULL WHERE nodeID = ?",
                       arguments: [nodeID.rawValue])
    }

    /// An attempt failed: the row is `failed` with the error, for the next drain (or `pending` again if a
    /// newer change was queued meanwhile).
    @available(*, noasync)
    package func fail(_ nodeID: NodeID, sequence: Int64, error: String) throws(DarkDiskError) {
        try index.write { db in try Self.fail(db, nodeID, sequence: sequence, error: error) }
    }

    package func fail(_ nodeID: NodeID, sequence: Int64, error: String) async throws(DarkDiskError) {
        try await index.write { db in try Self.fail(db, nodeID, sequence: sequence, error: error) }
    }

    private static func fail(_ db: Database, _ nodeID: NodeID, sequence: Int64, error: String) throws {
        try db.execute(sql: """
            UPDATE uploadQueue SET state = CASE WHEN sequence = ? THEN 'failed' ELSE 'pending' END, claimedBy = NULL,
              version = NULL, attempts = attempts + 1, lastError = ? WHERE nodeID = ?
            """, arguments: [sequence, error, nodeID.rawValue])
    }

    /// Gives a claimed change back (an uploader stopping): pending again.
    @available(*, noasync)
    package func release(_ nodeID: NodeID) throws(DarkDiskError) {
        try index.write { db in try Self.release(db, nodeID) }
    }

    package func release(_ nodeID: NodeID) async throws(DarkDiskError) {
        try await index.write { db in try Self.release(db, nodeID) }
    }

    private static func release(_ db: Database, _ nodeID: NodeID) throws {
        try db.execute(sql: "UPDATE uploadQueue SET state = 'pending', claimedBy = NULL WHERE nodeID = ? AND state = 'uploading'",
                       arguments: [nodeID.rawValue])
    }

    /// Drops the node's queued change without uploading it (the node was deleted).
    @available(*, noasync)
    package func remove(_ nodeID: NodeID) throws(DarkDiskError) {
        try index.write { db in try Self.remove(db, nodeID) }
    }

    package func remove(_ nodeID: NodeID) async throws(DarkDiskError) {
        try await index.write { db in try Self.remove(db, nodeID) }
    }

    private static func remove(_ db: Database, _ nodeID: NodeID) throws {
        try db.execute(sql: "DELETE FROM uploadQueue WHERE nodeID = ?", arguments: [nodeID.rawValue])
    }

    /// Whether process `pid` is running (a claim of one that is not is taken over).
    static func isRunning(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    private static func queued(from row: Row) -> QueuedUpload? {
        guard let id = try? NodeID(row["nodeID"] as String), let state = QueuedUpload.State(rawValue: row["state"]),
              let operation = QueuedUpload.Operation(rawValue: row["operation"]) else { return nil }
        return QueuedUpload(nodeID: id, operation: operation, name: row["name"], parentID: row["parentID"], queuedAt: Date(timeIntervalSince1970: row["queuedAt"]),
                            state: state, claimedBy: (row["claimedBy"] as Int64?).map { Int32(truncatingIfNeeded: $0) },
                            version: row["version"], attempts: row["attempts"], lastError: row["lastError"], sequence: row["sequence"],
                            basedOn: row["basedOn"])
    }
}
