import DarkDiskSync
import DarkDiskSystem
import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

/// Deletes files that are no longer in the index, unless a retain token (in any process) holds them;
/// those stay in the `pendingDelete` table until the last holder releases them or a later sweep runs.
final class FileDeleter: Sendable {
    let database: DatabasePool
    /// Paths this process marked pending (through any store instance) and has not seen deleted: a release
    /// looks up only these in the index (one read per `close` of every file was the cost before). A path
    /// another process marked goes at the next sweep of a process that has the store open (`StoreFiles.maintenanceInterval`).
    private static let markedHere = Locked<Set<String>>([])
    /// Paths deleted whose `pendingDelete` rows are still to go: they go in the next transaction that marks
    /// paths, or in a batch of their own once `goneBatch` wait (a transaction per deleted file made an `rm`
    /// cost two). A row left by a process that exits is harmless: the next sweep finds its file gone.
    private let gone = Locked<Set<String>>([])
    static let goneBatch = 256

    /// Takes back the markings of a transaction that rolls back: one observer on the writer connection for
    /// the deleter's life. (One added per transaction, as `afterNextTransaction` does, makes GRDB drop every
    /// cached statement that deletes: each `unlink` prepared its statements again.)
    private let rollbacks = RollbackWatch()

    init(database: DatabasePool) {
        self.database = database
        database.writeWithoutTransaction { db in db.add(transactionObserver: rollbacks, extent: .observerLifetime) }
    }

    /// Records `paths` as pending inside the caller's transaction, before the caller tries to delete them,
    /// so that a token released in between still sees the entry.
    func markPending(_ db: Database, paths: [String]) throws {
        guard !paths.isEmpty else { return }
        // Marked before the commit (a release in between must look), unmarked if the marking never commits.
        Self.markedHere.withLock { $0.formUnion(paths) }
        rollbacks.marked(paths)
        // (A path marked again is no longer gone; the rest of the gone go first, in this transaction.)
        gone.withLock { $0.subtract(paths) }
        try removeGone(db)
        let now = Date().timeIntervalSince1970
        for path in paths {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO pendingDelete (path, since) VALUES (?, ?)").execute(arguments: [path, now])
        }
    }

    /// Inside a write transaction: removes the rows of the paths gone so far (left to a sweep if it rolls back).
    private func removeGone(_ db: Database) throws {
        let paths = gone.withLock { set in
            defer { set = [] }
            return set
        }
        for path in paths {
            try db.cachedStatement(sql: "DELETE FROM pendingDelete WHERE path = ?").execute(arguments: [path])
        }
    }

    /// Removes the rows of every path gone so far now.
    func removeGone() {
        guard !gone.withLock({ $0.isEmpty }) else { return }
        _ = try? database.write { db in try self.removeGone(db) }
    }

    /// Deletes `path` now if nobody retains it; returns whether it is gone.
    @discardableResult
    func tryDelete(_ path: String) -> Bool {
        let file: OwnedDescriptor
        do { file = try OwnedDescriptor.open(path, O_RDONLY | O_NOFOLLOW) } catch {
            if error.rawValue == ENOENT || error.rawValue == ELOOP { forget(path) ; return true }
            return false
        }
        defer { try? file.close() }  // (the lock lasts until the file is gone)
        guard (try? file.tryLock(.exclusive)) == true else { return false }  // retained (or unlockable): later
        unlink(path)
        forget(path)
        return true
    }

    /// Called when a retain token lets go: completes a delete that was waiting for it.
    func finishPendingDelete(_ path: String) {
        guard Self.isMarkedHere(path) else { return }
        let pending = (try? database.read { db in
            try Bool.fetchOne(db, sql: "SELECT 1 FROM pendingDelete WHERE path = ?", arguments: [path])
        }) ?? nil
        if pending == true {
            tryDelete(path)
        } else if access(path, F_OK) != 0, errno == ENOENT {
            // Another process finished it. (A path still there stays marked: its marking may not have
            // committed yet, as when a migration's own reader of the original lets go first.)
            _ = Self.markedHere.withLock { $0.remove(path) }
        }
    }

    /// Whether a release of `path` in this process looks for it in the index.
    static func isMarkedHere(_ path: String) -> Bool {
        markedHere.withLock { $0.contains(path) }
    }

    /// Retries every pending delete (at start-up and from sweeps).
    func sweep() {
        removeGone()
        let paths = (try? database.read { db in try String.fetchAll(db, sql: "SELECT path FROM pendingDelete") }) ?? []
        for path in paths { tryDelete(path) }
    }

    func forget(_ path: String) {
        forget([path])
    }

    /// Notes `paths` as deleted: their `pendingDelete` rows go with the next batch (`gone`).
    func forget(_ paths: [String]) {
        guard !paths.isEmpty else { return }
        Self.markedHere.withLock { $0.subtract(paths) }
        let full = gone.withLock { set in
            set.formUnion(paths)
            return set.count >= Self.goneBatch
        }
        if full { removeGone() }
    }
}

extension FileDeleter {
    /// The paths marked in the writer connection's current transaction: forgotten when it commits, unmarked
    /// (`markedHere`) when it rolls back.
    private final class RollbackWatch: TransactionObserver, Sendable {
        private let current = Locked<[String]>([])

        func marked(_ paths: [String]) {
            current.withLock { $0 += paths }
        }

        func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { false }
        func databaseDidChange(with event: DatabaseEvent) {}

        func databaseDidCommit(_ db: Database) {
            current.withLock { $0 = [] }
        }

        func databaseDidRollback(_ db: Database) {
            let paths = current.withLock { paths in
                defer { paths = [] }
                return paths
            }
            if !paths.isEmpty { FileDeleter.markedHere.withLock { $0.subtract(paths) } }
        }
    }
}
