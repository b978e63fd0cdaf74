import DarkDiskCrypto
import DarkDiskSync
import DarkDiskSystem
import Foundation
import GRDB
import Logging

/// The store's files: imports (encrypting into a staging file, then renaming into place), exports with
/// retain tokens, deletes that wait for the last holder (`FileDeleter`), migration between the persistent
/// files and the cache pools, expiry, the pools' settings and sizes, and the one owner of eviction: only
/// work on `maintenanceQueue` evicts (rclone's cache cleaner). Change notifications of stored files, this
/// process's and other processes', go out from here. It knows nothing of the outline: callers give the
/// content key a file is sealed under.
public final class StoreFiles: Sendable {
    let location: StoreLocation
    let clock: any StoreClock
    let index: StoreIndex
    let keys: StoreKeys
    let logger: Logger
    let deleter: FileDeleter
    /// The one owner of eviction, expiry and sweeps: imports, releases and migrations kick it
    /// (`kickEviction`); the public calls wait for it.
    let maintenanceQueue = DispatchQueue(label: "darkdisk.maintenance")
    /// Pools an eviction was asked for and not yet run (kicks arriving meanwhile join it), and when the
    /// earliest run asked for is scheduled.
    let evictionsDue = Locked<(pools: Set<Pool>, at: DispatchTime?)>(([], nil))
    let maintenanceTimer = Locked<MaintenanceTimer?>(nil)
    let broadcaster = ChangeBroadcaster()
    /// Other processes' changes: this instance's origin tag, and the last log row it has read.
    let changeLog = ChangeLog()
    let changeLogSeen = Locked<(seq: Int64, rounds: Int)>((0, 0))
    /// Cache files' accesses waiting to be written together (`batchesAccessTimes`).
    let accessTimes = AccessTimes()
    /// Whether exports write their access times in batches (`AccessTimes`, the mount daemon) rather than
    /// at once (a command or a library user).
    let batchesAccessTimes = Locked(false)
    /// Whether the drive's commit journal names a stored file the index does not have yet (after replaying a
    /// stopped daemon's journal): such a version is no orphan. Set by the store before maintenance starts.
    let journaled = Locked<Callback<String, Bool>?>(nil)
    /// Orphans the start-up sweep found locked (by a reader of the same inode); each maintenance round retries them.
    let lockedOrphans = Locked<Set<String>>([])
    /// How often the timer enforces expiry, pool limits and the free-space floor.
    public static let maintenanceInterval: Double = 2

    init(location: StoreLocation, clock: any StoreClock, index: StoreIndex, keys: StoreKeys, logger: Logger) {
        self.location = location
        self.clock = clock
        self.index = index
        self.keys = keys
        self.logger = logger
        deleter = FileDeleter(database: index.pool)
    }

    /// Starts the change log and reads where it stands (a writable store).
    func installChangeLog() throws(DarkDiskError) {
        do {
            try changeLog.install(on: database)
            let newest = try database.read(ChangeLog.newest)
            changeLogSeen.withLock { $0.seq = newest }
        } catch {
            throw IndexDatabase.failure(error, doing: "cannot set up the index's change log")
        }
    }

    /// Start-up enforcement (finish interrupted deletes, expire, evict: index-driven, so fast at any size),
    /// then the orphan sweep in the background and the timer.
    func startMaintenance() {
        maintenanceQueue.sync { runMaintenance() }
        maintenanceQueue.async { [weak self] in _ = self?.sweepOrphans() }
        let timer = MaintenanceTimer(queue: maintenanceQueue, interval: Self.maintenanceInterval) { [weak self] in
            self?.runMaintenance()
        }
        maintenanceTimer.withLock { $0 = timer }
    }

    deinit {
        maintenanceTimer.withLock { $0?.cancel() }
        broadcaster.finish()
    }

    var database: DatabasePool { index.pool }

    /// Changes to stored files: this process' own as they happen (imports, deletes, evictions, expiries,
    /// migrations), and those of other processes sharing the store (the CLI, a mount daemon, a `pull`) within
    /// a maintenance round (2 s); from another process an eviction, expiry or delete arrives as `deleted`.
    public func changes(in pool: Pool? = nil) -> AsyncStream<StoreChange> {
        broadcaster.subscribe(pool: pool)
    }

    func notify(_ record: FileRecord, _ reason: StoreChange.Reason) {
        broadcaster.send(StoreChange(pool: record.pool, kind: record.kind, ownerID: record.ownerID, identityID: record.identityID, reason: reason))
    }

    /// Where the file of `record` lives: persistent files next to the index, cache files in the cache folder.
    func path(of record: FileRecord) -> String {
        path(name: record.name, mode: record.mode)
    }

    func path(name: String, mode: StorageMode) -> String {
        let root = mode == .persistent ? location.persistentFiles : location.cacheFiles
        return root + "/" + name.prefix(2) + "/" + name
    }

    /// Runs a read on the index (`StoreIndex.read`).
    func read<T>(_ body: (Database) throws -> T) throws(DarkDiskError) -> T {
        try index.read(body)
    }

    /// `StoreIndex.quickRead`.
    func quickRead<T>(_ body: (Database) throws -> T) throws(DarkDiskError) -> T {
        try index.quickRead(body)
    }

    /// Runs a write transaction on the index (`StoreIndex.write`).
    func write<T>(_ body: (Database) throws -> T) throws(DarkDiskError) -> T {
        try index.write(body)
    }

    /// `StoreKeys.unwrap(_:owner:)`.
    func unwrap(_ wrapped: Data, owner: KeyOwner? = nil) throws(DarkDiskError) -> SymmetricKey {
        try keys.unwrap(wrapped, owner: owner)
    }

    /// `key` wrapped for the index (unbound: the index is this machine's own), under the key-wrapping key.
    func wrapLocally(_ key: SymmetricKey) -> [UInt8] {
        keys.wrapLocally(key)
    }
}
