import Foundation
import GRDB
import Logging
import DarkDiskSystem

/// The store's index as its components use it: one `DatabasePool` per store per process, whose reads and
/// writes map SQLite's errors to `DarkDiskError` (a full disk gives up the space reserve once and tries
/// again). Synchronous forms for the threads that may block (libfuse's, the blocking pool's); async forms,
/// which run on GRDB's own queues, for async callers.
package final class StoreIndex: Sendable {
    package let pool: DatabasePool
    private let location: StoreLocation
    private let logger: Logger

    init(pool: DatabasePool, location: StoreLocation, logger: Logger) {
        self.pool = pool
        self.location = location
        self.logger = logger
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
