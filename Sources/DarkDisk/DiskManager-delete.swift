import Foundation
import GRDB

extension DiskManager {
    /// Deletes every stored file of a node and forgets the node. Files held by a retain token are
    /// deleted when the last token is released.
    public func deleteNode(_ nodeID: NodeID) throws(DarkDiskError) {
        let records = try read { db in
            try FileRecord.filter(Column("ownerID") == nodeID.rawValue && Column("kind") != FileKind.avatar.rawValue).fetchAll(db)
        }
        try deleteRecords(records) { db in
            try db.execute(sql: "DELETE FROM node WHERE id = ?", arguments: [nodeID.rawValue])
        }
    }

    /// Deletes one stored file of a node; returns whether there was one.
    @discardableResult
    public func deleteNodeFile(_ nodeID: NodeID, kind: FileKind) throws(DarkDiskError) -> Bool {
        guard let record = try read({ db in try FileRecord.find(db, kind: kind, owner: nodeID.rawValue) }) else { return false }
        try deleteRecords([record])
        return true
    }

    /// Deletes every avatar of a user.
    public func deleteUserAvatars(_ userID: UserID) throws(DarkDiskError) {
        let records = try read { db in
            try FileRecord.filter(Column("ownerID") == userID.rawValue && Column("kind") == FileKind.avatar.rawValue).fetchAll(db)
        }
        try deleteRecords(records)
    }

    /// Removes rows and then their files: the pending-delete entries commit with the row removal, so a
    /// crash at any point leaves either the row or a pending entry that a later sweep completes.
    func deleteRecords(_ records: [FileRecord], also extra: ((Database) throws -> Void)? = nil) throws(DarkDiskError) {
        let paths = records.map(path(of:))
        try write { db in
            try FileDeleter.markPending(db, paths: paths)
            for record in records { _ = try FileRecord.deleteOne(db, key: record.id) }
            try extra?(db)
        }
        for path in paths { deleter.tryDelete(path) }
    }
}
