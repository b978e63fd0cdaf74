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
    /// How many they are: a query's own columns come after them.
    static let count: Int32 = 11
}

extension DriveColumns {
    /// A row whose first columns are `selected`, read through GRDB.
    init(_ row: Row) {
        self.init(id: row[0] ?? "", name: row[1], parentID: row[2], created: row[3], type: row[4], mode: row[5],
                  mtime: row[6], mtimeNsec: row[7], target: row[8], xattrs: row[9], ctime: row[10])
    }
}
