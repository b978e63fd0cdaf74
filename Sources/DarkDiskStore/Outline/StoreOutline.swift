import DarkDiskCrypto
import DarkDiskSync
import Foundation
import GRDB

/// The outline: what the index knows of nodes and avatars besides their content. A node's row (from a
/// pull, or made here by an import or the drive) holds its key, name, folder, attributes, section sizes and
/// the cloud file it names; beside them are the pins, the downloads handed to the mount and the conflict
/// copies made here. Reads have a synchronous form, unavailable from async code, and an async one that
/// blocks no thread of Swift's pool. It drops a node's stored files through `StoreFiles` when a pull
/// finds a new version.
public final class StoreOutline: Sendable {
    let index: StoreIndex
    let keys: StoreKeys
    let clock: any StoreClock
    let files: StoreFiles
    /// Called before a pull's entries are written: local changes still on their way into the index (the
    /// drive's commit journal) go in first, so the queued uploads that keep them are seen. Set by the store.
    let beforeUpdate = Locked<Callback<Void, Void>?>(nil)

    init(index: StoreIndex, keys: StoreKeys, clock: any StoreClock, files: StoreFiles) {
        self.index = index
        self.keys = keys
        self.clock = clock
        self.files = files
    }

    func read<T>(_ body: (Database) throws -> T) throws(DarkDiskError) -> T {
        try index.read(body)
    }

    func write<T>(_ body: (Database) throws -> T) throws(DarkDiskError) -> T {
        try index.write(body)
    }

    /// The outline entry of a node, if the remote has told us about it.
    @available(*, noasync)
    public func entry(_ nodeID: NodeID) throws(DarkDiskError) -> OutlineEntry? {
        try read { db in try Self.entry(db, nodeID) }
    }

    public func entry(_ nodeID: NodeID) async throws(DarkDiskError) -> OutlineEntry? {
        try await index.read { db in try Self.entry(db, nodeID) }
    }

    static func entry(_ db: Database, _ nodeID: NodeID) throws -> OutlineEntry? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM node WHERE id = ? AND cloudETag IS NOT NULL"), arguments: [nodeID.rawValue])
            .map(Self.entry(from:))
    }

    /// A number that changes whenever the outline changes, in any process (a cheap check for watchers).
    @available(*, noasync)
    package func version() throws(DarkDiskError) -> Int64 {
        try read(Self.version)
    }

    package func version() async throws(DarkDiskError) -> Int64 {
        try await index.read(Self.version)
    }

    private static func version(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT version FROM outlineClock WHERE id = 1") ?? 0
    }

    /// What the index knows of a node besides its content (from a pull, or set through the drive); a file
    /// with the defaults when it knows nothing. A push writes them into the node's record.
    @available(*, noasync)
    public func attributes(of nodeID: NodeID) throws(DarkDiskError) -> NodeAttributes {
        try read { db in try Self.attributes(db, nodeID) }
    }

    public func attributes(of nodeID: NodeID) async throws(DarkDiskError) -> NodeAttributes {
        try await index.read { db in try Self.attributes(db, nodeID) }
    }

    static func attributes(_ db: Database, _ nodeID: NodeID) throws -> NodeAttributes {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT type, mode, mtime, mtimeNsec, target, xattrs FROM node WHERE id = ?"), arguments: [nodeID.rawValue])
            .map(Self.attributes(from:)) ?? NodeAttributes()
    }

    /// Sets what the drive shows of a node besides its content (the next push writes it into the node's
    /// record). Returns false when the index has no such node. Refuses attributes that cannot describe a node.
    @discardableResult
    package func setAttributes(_ attributes: NodeAttributes, of nodeID: NodeID) throws(DarkDiskError) -> Bool {
        try write { db in try Self.setAttributes(db, attributes, of: nodeID) }
    }

    /// `setAttributes(_:of:)` within a transaction.
    static func setAttributes(_ db: Database, _ attributes: NodeAttributes, of nodeID: NodeID) throws -> Bool {
        if let problem = attributes.problem { throw DarkDiskError(.invalidArgument, "node '\(nodeID)': \(problem)") }
        let extended: Data?
        do { extended = try Self.extendedAttributesColumn(attributes) } catch {
            throw DarkDiskError(.invalidArgument, "node '\(nodeID)': cannot encode its extended attributes")
        }
        try db.cachedStatement(sql: "UPDATE node SET type = ?, mode = ?, mtime = ?, mtimeNsec = ?, target = ?, xattrs = ? WHERE id = ?").execute(
                       arguments: [attributes.kind.rawValue, Int64(attributes.mode), attributes.modifiedSeconds,
                                   Int64(attributes.modifiedNanoseconds), attributes.target, extended, nodeID.rawValue])
        return db.changesCount > 0
    }

    /// The name and folder the index gives a node (from a pull, or set through the drive before any upload).
    @available(*, noasync)
    public func placement(_ nodeID: NodeID) throws(DarkDiskError) -> (name: String?, parentID: String?) {
        try read { db in try Self.placement(db, nodeID) }
    }

    public func placement(_ nodeID: NodeID) async throws(DarkDiskError) -> (name: String?, parentID: String?) {
        try await index.read { db in try Self.placement(db, nodeID) }
    }

    private static func placement(_ db: Database, _ nodeID: NodeID) throws -> (name: String?, parentID: String?) {
        let row = try Row.fetchOne(db, sql: "SELECT name, parentID FROM node WHERE id = ?", arguments: [nodeID.rawValue])
        return (row?["name"], row?["parentID"])
    }

    /// Whether the index has a row for the node (made here, or told by the remote).
    @available(*, noasync)
    public func hasNode(_ nodeID: NodeID) throws(DarkDiskError) -> Bool {
        try read { db in try Self.hasNode(db, nodeID) }
    }

    public func hasNode(_ nodeID: NodeID) async throws(DarkDiskError) -> Bool {
        try await index.read { db in try Self.hasNode(db, nodeID) }
    }

    private static func hasNode(_ db: Database, _ nodeID: NodeID) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT 1 FROM node WHERE id = ?", arguments: [nodeID.rawValue]) ?? false
    }

    /// Every node the remote has told us about.
    @available(*, noasync)
    public func entries() throws(DarkDiskError) -> [OutlineEntry] {
        try read(Self.entries)
    }

    public func entries() async throws(DarkDiskError) -> [OutlineEntry] {
        try await index.read(Self.entries)
    }

    private static func entries(_ db: Database) throws -> [OutlineEntry] {
        try Row.fetchAll(db, sql: "SELECT * FROM node WHERE cloudETag IS NOT NULL ORDER BY id").map(entry(from:))
    }

    /// Records what a pull or push learned about a node. On a pull, a new ETag means the node changed in the
    /// cloud: its local files are stale and are deleted (retained ones when released); a push of local files
    /// passes `invalidatingLocalFiles: false`. Returns whether the ETag changed.
    ///
    /// `keepingLocalPlacement`: the entry is this store's own record, just written: a node the index has
    /// keeps the name, folder and attributes the index gives it, which are the ones uploaded or newer (a
    /// rename or `chmod` through the drive while the upload ran, queued to go next), and a node the index
    /// no longer has (deleted while it uploaded) is not brought back.
    @available(*, noasync)
    @discardableResult
    package func update(_ entry: OutlineEntry, invalidatingLocalFiles: Bool = true, keepingLocalPlacement: Bool = false) throws(DarkDiskError) -> Bool {
        try !update([entry], invalidatingLocalFiles: invalidatingLocalFiles, keepingLocalPlacement: keepingLocalPlacement).isEmpty
    }

    /// `update(_:invalidatingLocalFiles:)` for many nodes in one transaction (a pull of a whole
    /// bucket commits once, not once per node). Returns the nodes whose ETag changed.
    ///
    /// `pulledGenerations`: a pull's entries, by the generations of their records. A node with a change
    /// queued here when the transaction runs is left as it is: its upload meets the remote's change (and
    /// merges it, or makes a conflict copy of the local version), and its local files stay for that. So is
    /// a node whose record this store has seen at a newer generation since the pull read it (its own upload
    /// landed meanwhile): what the pull read is older. The generation of each entry applied is noted in the
    /// same transaction.
    @available(*, noasync)
    @discardableResult
    package func update(_ entries: [OutlineEntry], invalidatingLocalFiles: Bool = true, keepingLocalPlacement: Bool = false,
                              pulledGenerations: [NodeID: UInt64] = [:]) throws(DarkDiskError) -> Set<NodeID> {
        let placement = keepingLocalPlacement ? "" : ", name = excluded.name, parentID = excluded.parentID, type = excluded.type, mode = excluded.mode, "
            + "mtime = excluded.mtime, mtimeNsec = excluded.mtimeNsec, target = excluded.target, xattrs = excluded.xattrs"
        for entry in entries { _ = try keys.unwrap(entry.wrappedKey, for: .node(entry.nodeID)) }
        let created = clock.now.timeIntervalSince1970
        beforeUpdate.withLock { $0 }?.call(())
        // One transaction: the version compared is the one replaced, even with a pull in another process.
        let (changed, stale) = try write { db -> (Set<NodeID>, [FileRecord]) in
            var changed = Set<NodeID>()
            var stale: [FileRecord] = []
            for entry in entries {
                let previous = try Row.fetchOne(db, sql: "SELECT wrappedKey, cloudETag FROM node WHERE id = ?", arguments: [entry.nodeID.rawValue])
                // This store's own record of a node deleted here while it uploaded: not brought back.
                if keepingLocalPlacement, previous == nil { continue }
                if let generation = pulledGenerations[entry.nodeID] {
                    if try Bool.fetchOne(db, sql: "SELECT 1 FROM uploadQueue WHERE nodeID = ?", arguments: [entry.nodeID.rawValue]) == true { continue }
                    // A newer record this store wrote (or pulled) since the pull read this one: it stays.
                    let applied = try Int64.fetchOne(db, sql: "SELECT generation FROM recordGeneration WHERE nodeID = ?",
                                                     arguments: [entry.nodeID.rawValue]) ?? 0
                    if applied > Int64(clamping: generation) { continue }
                    try db.execute(sql: """
                        INSERT INTO recordGeneration (nodeID, generation) VALUES (?, ?)
                        ON CONFLICT(nodeID) DO UPDATE SET generation = MAX(generation, excluded.generation)
                        """, arguments: [entry.nodeID.rawValue, Int64(clamping: generation)])
                }
                let previousETag: String? = previous?["cloudETag"]
                let etagChanged = previous != nil && previousETag != nil && previousETag != entry.cloudETag
                if etagChanged { changed.insert(entry.nodeID) }
                if invalidatingLocalFiles, etagChanged || (previous != nil && previousETag == nil && (previous!["wrappedKey"] as Data) != Data(entry.wrappedKey)) {
                    // Local files were made for another version (or under another key): they are not this node any more.
                    stale += try dropStaleFiles(db, of: entry.nodeID, kinds: [.data, .metadata, .thumbnail], at: created)
                }
                let attributes = entry.attributes
                let extended = try Self.extendedAttributesColumn(attributes)
                try db.execute(sql: """
                    INSERT INTO node (id, wrappedKey, name, parentID, cloudETag, created, metadataSize, thumbnailSize, dataSize, cloudVersion,
                      type, mode, mtime, mtimeNsec, target, xattrs, ctime, cloudFileID, keyedNames)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?6, ?, ?)
                    ON CONFLICT(id) DO UPDATE SET wrappedKey = excluded.wrappedKey, cloudETag = excluded.cloudETag,
                      metadataSize = excluded.metadataSize, thumbnailSize = excluded.thumbnailSize, dataSize = excluded.dataSize,
                      cloudVersion = excluded.cloudVersion, keyedNames = excluded.keyedNames,
                      cloudFileID = CASE WHEN excluded.cloudVersion IS node.cloudVersion
                        THEN COALESCE(excluded.cloudFileID, node.cloudFileID) ELSE excluded.cloudFileID END\(placement)
                    """, arguments: [entry.nodeID.rawValue, Data(entry.wrappedKey), entry.name, entry.parentID, entry.cloudETag,
                                     created, Int64(entry.metadataSize), Int64(entry.thumbnailSize), Int64(entry.dataSize), entry.cloudVersion,
                                     attributes.kind.rawValue, Int64(attributes.mode), attributes.modifiedSeconds,
                                     Int64(attributes.modifiedNanoseconds), attributes.target, extended, entry.cloudFileID.map { Data($0) },
                                     entry.keyedNames])
            }
            return (changed, stale)
        }
        files.finishDeletes(stale, reason: .deleted)
        // A partial download of the old version can never complete.
        for id in changed { files.removeIdlePartialDownload(id) }
        return changed
    }

    /// Deletes the node's local files of `kinds`, which are not its current version any more (a push of
    /// other content replaced them): a persistent one is replaced, never just dropped (`keptVersionsToReplace`).
    @available(*, noasync)
    package func invalidateLocalFiles(of nodeID: NodeID, kinds: Set<FileKind>) throws(DarkDiskError) {
        guard !kinds.isEmpty else { return }
        let created = clock.now.timeIntervalSince1970
        let stale = try write { db in try dropStaleFiles(db, of: nodeID, kinds: kinds, at: created) }
        files.finishDeletes(stale, reason: .deleted)
    }

    /// Deletes the rows of the node's stale files; a kept (persistent) file's new version is to be kept too.
    /// `invalidateLocalFiles(of:kinds:)`, only while the node's data file is still `fileID` (checked in the
    /// transaction that drops them): a newer version committed meanwhile (a change still to upload) stays.
    /// Whether they went.
    @available(*, noasync)
    @discardableResult
    package func invalidateLocalFiles(of nodeID: NodeID, kinds: Set<FileKind>, whileDataFileIs fileID: Int64) throws(DarkDiskError) -> Bool {
        let created = clock.now.timeIntervalSince1970
        let stale = try write { db -> [FileRecord]? in
            guard try FileRecord.find(db, kind: .data, owner: nodeID.rawValue)?.id == fileID else { return nil }
            return try dropStaleFiles(db, of: nodeID, kinds: kinds, at: created)
        }
        guard let stale else { return false }
        files.finishDeletes(stale, reason: .deleted)
        return true
    }

    private func dropStaleFiles(_ db: Database, of nodeID: NodeID, kinds: Set<FileKind>, at time: Double) throws -> [FileRecord] {
        let dropped = try files.deleteRows(db, try FileRecord.filter(Column("ownerID") == nodeID.rawValue
            && kinds.map(\.rawValue).contains(Column("kind"))).fetchAll(db))
        for record in dropped where record.mode == .persistent {
            try db.execute(sql: "INSERT OR IGNORE INTO keepPersistent (nodeID, kind, since) VALUES (?, ?, ?)",
                           arguments: [nodeID.rawValue, record.kind.rawValue, time])
        }
        return dropped
    }

    /// Node files that were kept (persistent) when a pull found a new version in the remote and dropped the
    /// old one: their new version is stored persistently whenever it is stored (a download, a read on the
    /// mount). `darkdisk pull` downloads them at once.
    package func keptVersionsToReplace() throws(DarkDiskError) -> [(nodeID: NodeID, kind: FileKind)] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT nodeID, kind FROM keepPersistent ORDER BY nodeID, kind").compactMap { row in
                guard let id = try? NodeID(row["nodeID"] as String), let kind = FileKind(rawValue: row["kind"]) else { return nil }
                return (id, kind)
            }
        }
    }

    static func entry(from row: Row) throws -> OutlineEntry {
        OutlineEntry(nodeID: try NodeID(row["id"]), name: row["name"], parentID: row["parentID"],
                     metadataSize: UInt64(row["metadataSize"] as Int64), thumbnailSize: UInt64(row["thumbnailSize"] as Int64),
                     dataSize: UInt64(row["dataSize"] as Int64), wrappedKey: Array(row["wrappedKey"] as Data),
                     cloudETag: row["cloudETag"], cloudVersion: row["cloudVersion"],
                     cloudFileID: (row["cloudFileID"] as Data?).map { Array($0) }, keyedNames: row["keyedNames"] ?? false,
                     attributes: try attributes(from: row))
    }

    /// The `xattrs` column of a node row: JSON of name to base64 of the value; NULL for none.
    static func extendedAttributesColumn(_ attributes: NodeAttributes) throws -> Data? {
        attributes.extendedAttributes.isEmpty ? nil : try JSONEncoder().encode(attributes.extendedAttributes.mapValues { Data($0) })
    }

    /// A node row's attributes; a row written before they were kept is a file with the defaults.
    static func attributes(from row: Row) throws -> NodeAttributes {
        let extended: Data? = row["xattrs"]
        let mode: Int64? = row["mode"]
        let nanoseconds: Int64? = row["mtimeNsec"]
        return NodeAttributes(kind: (row["type"] as String?).flatMap(NodeAttributes.Kind.init) ?? .file, mode: mode.map { UInt32($0) },
                              modifiedSeconds: row["mtime"], modifiedNanoseconds: UInt32(nanoseconds ?? 0), target: row["target"],
                              extendedAttributes: try extendedAttributes(fromColumn: extended))
    }

    /// The extended attributes the `xattrs` column holds (`extendedAttributesColumn`); none for NULL.
    static func extendedAttributes(fromColumn column: Data?) throws -> [String: [UInt8]] {
        try column.map { try JSONDecoder().decode([String: Data].self, from: $0).mapValues { Array($0) } } ?? [:]
    }
}
