import DarkDiskSync
import Dispatch
import Foundation
import GRDB
import Logging

/// Copies the index's write-ahead log back into the database on a connection and a thread of its own, so
/// that no writer pays for it. SQLite's automatic checkpoint runs inside the commit that crosses 1,000 log
/// pages, and in the mount that was a `close` every sixty-odd files of a `tar x`, waiting for a copy of
/// 4 MiB and an `fsync`. Here a passive checkpoint (one that never waits for a reader or a writer) runs
/// whenever the log has grown past that size, checked ten times a second; the store's own connections
/// make none (`wal_autocheckpoint = 0`). A checkpoint that fails is logged and tried again at the next check.
final class IndexCheckpointer: Sendable {
    /// Log bytes past which a checkpoint runs: SQLite's default of 1,000 pages.
    static let threshold: Int64 = 1000 * 4096
    private let connection: DatabaseQueue
    private let walPath: String
    private let logger: Logger
    private let timer = Locked<MaintenanceTimer?>(nil)
    private let queue = DispatchQueue(label: "darkdisk.checkpoint", qos: .utility)

    /// Opens its connection to the index at `path` (in WAL mode already) and starts checking.
    init(path: String, logger: Logger) throws {
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.label = "darkdisk.index.checkpoint"
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        connection = try DatabaseQueue(path: path, configuration: config)
        walPath = path + "-wal"
        self.logger = logger
        timer.withLock { $0 = MaintenanceTimer(queue: queue, interval: 0.1, leeway: 0.05) { [weak self] in self?.checkIfDue() } }
    }

    /// Stops checking (the store is closing).
    func stop() {
        timer.withLock { $0?.cancel(); $0 = nil }
        queue.sync {}
    }

    deinit {
        timer.withLock { $0?.cancel() }
    }

    private func checkIfDue() {
        var st = stat()
        guard stat(walPath, &st) == 0, Int64(st.st_size) > Self.threshold else { return }
        checkpoint()
    }

    /// Runs one passive checkpoint now.
    func checkpoint() {
        do {
            try connection.writeWithoutTransaction { db in _ = try db.checkpoint(.passive) }
        } catch {
            logger.warning("cannot copy the index's log into the index (\(error)); trying again shortly")
        }
    }
}
