import Foundation
import GRDB

/// A node's drive columns as the index holds them, before they are checked and made a `DriveNode`
/// (`DiskManager.driveNode(from:in:)`): read through GRDB, or through SQLite's C API by the lookup connection.
struct DriveColumns {
    let id: String
    let name: String?
    let parentID: String?
    let created: Double
    let type: String?
    let mode: Int64?
    let mtime: Int64?
    let mtimeNsec: Int64?
    let target: String?
    let xattrs: Data?
    let ctime: Double?

    /// The `node` columns a query selects to make one, in this order, first in its result.
    static let selected = "id, name, parentID, created, type, mode, mtime, mtimeNsec, target, xattrs, ctime"
}

extension DriveColumns {
    /// A row whose first columns are `selected`, read through GRDB.
    init(_ row: Row) {
        self.init(id: row[0] ?? "", name: row[1], parentID: row[2], created: row[3], type: row[4], mode: row[5],
                  mtime: row[6], mtimeNsec: row[7], target: row[8], xattrs: row[9], ctime: row[10])
    }
}

/// A node's drive columns with what a listing or a lookup shows of its data: whether the outline has the
/// node (its ETag) and the size it gives its data, and its stored data file's row, if any.
struct DriveListedColumns {
    let node: DriveColumns
    /// The outline's data size; nil when the outline has no ETag for the node (the remote does not have it).
    let remoteDataSize: Int64?
    let data: StoredData?

    /// The stored data file's columns.
    struct StoredData {
        let fileID: Int64
        let mode: String?
        let plaintextSize: Int64
        let storedSize: Int64
        let modified: Double
        let lastAccess: Double
        let expiration: Double
        let format: Int64?
        let cloudFileID: Data?
    }

    /// The drive columns (0–10), the outline's ETag and data size (11, 12), and the stored data file's (13–21).
    private static let columns = """
        child.id, child.name, child.parentID, child.created, child.type, child.mode, child.mtime, child.mtimeNsec,
        child.target, child.xattrs, child.ctime, child.cloudETag, child.dataSize,
        file.id, file.mode, file.plaintextSize, file.storedSize, file.modified, file.lastAccess, file.expiration, file.format,
        file.cloudFileID
        """
    private static let from = "FROM node AS child LEFT JOIN file ON file.kind = 'data' AND file.ownerID = child.id AND file.identityID = ''"
    /// The query's head, of `node AS child`: a `WHERE` on `child` follows.
    static let select = "SELECT \(columns) \(from)"
    /// How many columns `select` gives: a query's own come after them.
    static let count: Int32 = 22
    /// The nodes named `?2` in folder `?1` (not the top).
    static let named = "\(select) WHERE child.parentID = ?1 AND child.name = ?2"
    /// Node `?1` if the outline names it, and whether its parent is a named folder (column `count`).
    static let byID = """
        SELECT \(columns), EXISTS (SELECT 1 FROM node AS parent WHERE parent.id = child.parentID AND parent.type = 'folder'
                                                                   AND parent.name IS NOT NULL)
        \(from) WHERE child.id = ?1 AND child.name IS NOT NULL
        """
}

extension DriveListedColumns {
    /// A row whose first columns are `select`'s, read through GRDB.
    init(_ row: Row) {
        let fileID: Int64? = row[13]
        self.init(node: DriveColumns(row), remoteDataSize: (row[11] as String?) == nil ? nil : row[12] as Int64,
                  data: fileID.map { StoredData(fileID: $0, mode: row[14], plaintextSize: row[15], storedSize: row[16], modified: row[17],
                                                lastAccess: row[18], expiration: row[19], format: row[20],
                                                cloudFileID: row[21]) })
    }
}
