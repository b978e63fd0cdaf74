import Foundation
import GRDB
import Logging
import DarkDiskSync
import DarkDiskSystem

/// The store's index as its components use it: one `DatabasePool` per store per process, whose reads and
/// writes map SQLite's errors to `DarkDiskError` (a full disk gives up the space reserve once and tries
/// again). Synchronous forms for the threads that may block (libfuse's, the blocking pool's); async forms,
/// which run on GRDB's own queues, for async callers.
package final class StoreIndex: Sendable {
    package let pool: DatabasePool
    private let location: StoreLocation
    private let logger: Logger
    /// A read-only connection of its own for the drive's lookups (`withLookupConnection`): opened at the
    /// first, given up for good (`.unusable`) if it cannot be opened or fails; never opened for a read-only store.
    let lookupConnection: Locked<LookupConnection>

    enum LookupConnection {
        case unopened
        case open(DriveLookupConnection)
        case unusable
    }

    /// The shared lock on the index this process holds while its pool is open (nil on a read-only file
    /// system): `IndexCipher` encrypts a plaintext index only when nobody else holds one.
    private let openLock: IndexCipher.OpenLock?
    /// Checkpoints the index off every writer's path (nil: read-only, or SQLite's own checkpoints).
    private let checkpointer: IndexCheckpointer?

    /// The lock and the checkpointer live as long as the pool: components that outlive the facade (a
    /// retained export keeps the files' part) keep the index as it was opened.
    init(pool: DatabasePool, location: StoreLocation, logger: Logger, lookups: Bool, openLock: IndexCipher.OpenLock?,
         checkpointer: IndexCheckpointer?) {
        self.pool = pool
        self.location = location
        self.logger = logger
        self.openLock = openLock
        self.checkpointer = checkpointer
        lookupConnection = Locked(lookups ? .unopened : .unusable)
    }

    deinit {
        checkpointer?.stop()
    }

    /// Runs `body` on the drive's lookup connection (`DriveLookupConnection`), opened at the first call; nil
    /// when there is none: a store opened read-only (its index is a private copy), or one that could not be
    /// opened or failed once (given up for good, logged). The caller then reads through the pool. Lookups
    /// take turns on it.
    func withLookupConnection<T>(_ body: (DriveLookupConnection) throws(DriveLookupConnection.Failure) -> T) -> T? {
        lookupConnection.withLock { state -> T? in
            if case .unopened = state {
                do { state = .open(try DriveLookupConnection(path: location.indexPath)) } catch {
                    logger.warning("\(error); lookups read through the pool")
                    state = .unusable
                }
            }
            guard case .open(let connection) = state else { return nil }
            do { return try body(connection) } catch {
                logger.warning("the index's lookup connection failed (\(error)); lookups read through the pool from now on")
                state = .unusable
                return nil
            }
        }
    }

    /// Flushes the index's last commits to the disk: its write-ahead log, which `synchronous = NORMAL` leaves
    /// to the next checkpoint (a crash of the process loses nothing either way; a power loss could). The
    /// drive's folders live there: an `fsync` of a folder is this.
    func sync() {
        // (No log: every commit is in the database file, flushed by its checkpoint.)
        guard let log = try? OwnedDescriptor.open(location.indexPath + "-wal", O_RDONLY) else { return }
        do { try log.fdatasync() } catch { logger.error("cannot flush the index's log \(location.indexPath)-wal: \(error)") }
    }

    /// A text setting of the store (its remote URL, say): the `storeText` table.
    func text(_ key: String) throws(DarkDiskError) -> String? {
        try read { db in try String.fetchOne(db, sql: "SELECT value FROM storeText WHERE key = ?", arguments: [key]) }
    }

    func setText(_ value: String, for key: String) throws(DarkDiskError) {
        try write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO storeText (key, value) VALUES (?, ?)", arguments: [key, value])
        }
    }

    /// Runs a read in one snapshot.
    package func read<T>(_ body: (Database) throws -> T) throws(DarkDiskError) -> T {
        do { return try pool.read(body) } catch let error as DarkDiskError { throw error } catch {
            throw DarkDiskError(.database, "index read failed: \(error)")
        }
    }

    /// Runs a read of one statement (or of statements that need not see one snapshot) without a transaction
    /// of its own: a statement is one snapshot by itself, and GRDB's isolated read costs four statements more
    /// (`query_only` on and off, a savepoint and its release), more than a drive lookup's own query.
    package func quickRead<T>(_ body: (Database) throws -> T) throws(DarkDiskError) -> T {
        do { return try pool.unsafeRead(body) } catch let error as DarkDiskError { throw error } catch {
            throw DarkDiskError(.database, "index read failed: \(error)")
        }
    }

    /// Runs a write transaction.
    package func write<T>(_ body: (Database) throws -> T) throws(DarkDiskError) -> T {
        do { return try pool.write(body) } catch let error as DarkDiskError { throw error } catch {
            if (error as? DatabaseError)?.resultCode == .SQLITE_FULL, SpaceReserve.release(in: location.dataDirectory) {
                logger.warning("the disk is full: gave up the 1 MiB space reserve for this index write")
                do { return try pool.write(body) } catch { throw IndexDatabase.failure(error, doing: "index write failed") }
            }
            throw IndexDatabase.failure(error, doing: "index write failed")
        }
    }

    /// `read`, from async code: on GRDB's reader queue, never on the caller's thread.
    package func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(DarkDiskError) -> T {
        do { return try await pool.read(body) } catch let error as DarkDiskError { throw error } catch {
            throw DarkDiskError(.database, "index read failed: \(error)")
        }
    }

    /// `write`, from async code: on GRDB's writer queue, never on the caller's thread.
    package func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(DarkDiskError) -> T {
        do { return try await pool.write(body) } catch let error as DarkDiskError { throw error } catch {
            throw IndexDatabase.failure(error, doing: "index write failed")
        }
    }
}

/// Runs blocking store work (an index transaction that may wait on another process, file I/O) on the shared
/// `BlockingPool`: the one helper behind every `async` form of the store's components.
func blocking<Value: Sendable>(_ body: @escaping @Sendable () throws(DarkDiskError) -> Value) async throws(DarkDiskError) -> Value {
    try await BlockingPool.shared.run(body)
}
