import DarkDiskCrypto
import Foundation
import GRDB
import Logging
import DarkDiskSync
import DarkDiskSystem
import Synchronization

/// The store: imports files (encrypting them), hands them out with retain tokens, keeps pools and
/// settings in the index, and deletes safely. One instance per store per process; the CLI and the mount
/// daemon may have the same store open at once.
public final class DiskManager: Sendable {
    public let location: StoreLocation
    /// The wall clock for modification and access times and expiry (`SystemClock` unless given).
    public let clock: any StoreClock
    /// The index: its pool, and reads and writes with the store's errors.
    package let index: StoreIndex
    var database: DatabasePool { index.pool }
    /// Local changes waiting for the remote.
    public let uploadQueue: UploadQueue
    /// What the store keeps of the bucket's records: generations applied, the fingerprint, remote garbage.
    package let records: RecordLedger
    /// Seals the drive's commit journal as the index is encrypted (a store with a passphrase); nil: in the clear.
    let journalKey: SymmetricKey?
    let indexCounter = IndexStatistics.Counter()
    /// The master key and what is derived from it: wrapping, record seals, object names.
    package let keys: StoreKeys
    /// The stored files: imports, exports, deletes, migration, expiry, pools and eviction.
    public let files: StoreFiles
    /// What the index knows of nodes and avatars besides their content: entries, attributes, keys, pins.
    public let outline: StoreOutline
    let logger: Logger
    /// The drive's commit journal, in the instance that writes it (`startDriveJournal`: the mount daemon).
    let driveJournal = Locked<DriveCommitJournal?>(nil)
    /// The change rows the drive journal wrote for this process's own commits (its watcher skips them).
    let ownCommitChanges = Locked(OwnCommitChanges())
    /// Scratch files kept for the next upload (`ScratchFile`).
    let scratchFiles = ScratchFilePool()
    /// When this instance last changed the drive (`noteDriveChange`), in the store clock's milliseconds; 0: never.
    private let lastDriveChangeMilliseconds = Atomic<Int64>(0)
    /// New persistent stored files made ahead of need while the drive journals (the mount daemon).
    let unnamedFiles = Locked<UnnamedFilePool?>(nil)

    /// Whether a store has been created at `location` (its key file exists).
    public static func exists(at location: StoreLocation) -> Bool {
        var st = stat()
        return lstat(location.keyPath, &st) == 0 || errno != ENOENT
    }

    /// Why the key file at `location` cannot be looked at (its folder is another user's, say), if it cannot:
    /// said as such, never as a missing key.
    public static func unreachableKey(at location: StoreLocation) -> DarkDiskError? {
        var st = stat()
        guard lstat(location.keyPath, &st) != 0, errno != ENOENT else { return nil }
        let cause = String(cString: strerror(errno))
        return DarkDiskError(.keyFile, "cannot reach the store's key file \(location.keyPath): \(cause)"
            + (errno == EACCES ? " (the store is another user's, or its folder's permissions changed)" : ""))
    }

    /// Creates a new store: folders, a random master key (optionally wrapped by `passphrase` at
    /// `passphraseCost`) and the index. With `adoptingKeyFile` (another machine's passphrase-protected key
    /// file) the store joins that key, at the cost that file records.
    public static func create(at location: StoreLocation, passphrase: [UInt8]? = nil, passphraseCost: PassphraseCost = .standard,
                              adoptingKeyFile: Data? = nil, logger: Logger = Logger(label: "darkdisk.store"), clock: any StoreClock = SystemClock()) throws(DarkDiskError) -> DiskManager {
        if let problem = unreachableKey(at: location) { throw problem }
        if exists(at: location) {
            throw DarkDiskError(.storeExists, "a store already exists at \(location.configDirectory)")
        }
        try refuseIndexWithoutKey(at: location)
        // A creation that fails part-way leaves nothing it made: a key without a store would make the next
        // `init` refuse ("a store already exists") or open a store that is not there.
        let madeConfig = missingDirectories(location.configDirectory)
        let madeData = missingDirectories(location.dataDirectory)
        let keyExisted = FileManager.default.fileExists(atPath: location.keyPath)
        do throws(DarkDiskError) {
            try FileOperations.makeDirectory(location.configDirectory, allowLink: true)
            let key: SymmetricKey
            if let adoptingKeyFile {
                guard let passphrase else {
                    throw DarkDiskError(.passphraseRequired, "the remote's key is protected by a passphrase; none was given")
                }
                key = try MasterKeyFile.adopt(adoptingKeyFile, at: location.keyPath, passphrase: passphrase)
            } else {
                key = try MasterKeyFile.create(at: location.keyPath, passphrase: passphrase, cost: passphraseCost)
            }
            return try DiskManager(location: location, masterKey: key, logger: logger, clock: clock)
        } catch {
            if !keyExisted { unlink(location.keyPath) }
            for made in [madeData.first, madeConfig.first].compactMap({ $0 }) { try? FileManager.default.removeItem(atPath: made) }
            throw error
        }
    }

    /// The folders of `path` (itself included) that do not exist, outermost first. (A link counts as there,
    /// even one that leads nowhere: it is the user's, never removed.)
    private static func missingDirectories(_ path: String) -> [String] {
        var missing: [String] = []
        var current = (path as NSString).standardizingPath
        var st = stat()
        while current != "/", !current.isEmpty, lstat(current, &st) != 0 {
            missing.insert(current, at: 0)
            current = (current as NSString).deletingLastPathComponent
        }
        return missing
    }

    /// A store whose index exists but whose key file does not (moved away, or another `XDG_CONFIG_HOME`)
    /// is never given a new key: what it holds is sealed under the old one, and a second key would make
    /// a store of two halves that no key reads whole.
    static func refuseIndexWithoutKey(at location: StoreLocation) throws(DarkDiskError) {
        guard FileManager.default.fileExists(atPath: location.indexPath) else { return }
        throw DarkDiskError(.keyFile, "the store at \(location.dataDirectory) has no key file at \(location.keyPath) (moved, or another XDG_CONFIG_HOME?); put its key back there: a new key cannot read what the store holds")
    }

    /// Opens an existing store, unlocking its key with `passphrase` if it has one.
    public convenience init(location: StoreLocation, passphrase: [UInt8]? = nil, logger: Logger = Logger(label: "darkdisk.store"),
                            clock: any StoreClock = SystemClock()) throws(DarkDiskError) {
        if let problem = DiskManager.unreachableKey(at: location) { throw problem }
        guard DiskManager.exists(at: location) else {
            try DiskManager.refuseIndexWithoutKey(at: location)
            throw DarkDiskError(.storeNotFound, "no store at \(location.configDirectory)")
        }
        let key = try MasterKeyFile.load(at: location.keyPath, passphrase: passphrase)
        try self.init(location: location, masterKey: key, logger: logger, clock: clock)
    }

    init(location: StoreLocation, masterKey: SymmetricKey, logger: Logger, clock: any StoreClock = SystemClock()) throws(DarkDiskError) {
        self.location = location
        self.clock = clock
        keys = try StoreKeys(masterKey: masterKey)
        self.logger = logger
        try FileOperations.makeDirectory(location.dataDirectory, allowLink: true)
        try FileOperations.makeDirectory(location.persistentFiles)
        try FileOperations.makeDirectory(location.persistentStaging)
        let readOnly = SpaceReserve.isReadOnly(location.dataDirectory)
        let trigger = readOnly ? nil : IndexCheckpointer.Trigger(counting: indexCounter)
        // With a passphrase the index is encrypted at rest (one written before is, once this process has the
        // store alone); without one its key file is beside it, and it stays in the clear.
        let cipher = try MasterKeyFile.needsPassphrase(at: location.keyPath) ? keys.indexCipher() : nil
        try cipher?.register(location.indexPath)
        do { journalKey = try cipher.map { [keys] _ in try keys.journalKey() } } catch {
            throw DarkDiskError(.corrupt, "cannot derive the drive journal's key: \(error)")
        }
        let openLock = readOnly ? nil : try IndexCipher.OpenLock(indexPath: location.indexPath)
        if let cipher, let openLock {
            do {
                if try cipher.encryptIfAlone(location.indexPath, lock: openLock) { logger.notice("the store's index is encrypted at rest now") }
            } catch {
                logger.warning("the store's index stays in the clear for now (tried again at the next opening): \(error)")
            }
        }
        let pool = try Self.openIndex(location, readOnly: readOnly, counter: indexCounter, trigger: trigger, cipher: cipher)
        index = StoreIndex(pool: pool, location: location, logger: logger, lookups: !readOnly, openLock: openLock,
                           checkpointer: trigger.flatMap { Self.startCheckpointer(location.indexPath, $0, logger: logger) })
        uploadQueue = UploadQueue(index: index, clock: clock)
        records = RecordLedger(index: index, keys: keys, clock: clock)
        files = StoreFiles(location: location, clock: clock, index: index, keys: keys, logger: logger)
        outline = StoreOutline(index: index, keys: keys, clock: clock, files: files)
        if !readOnly { SpaceReserve.ensure(in: location.dataDirectory) }
        // Start-up enforcement: finish interrupted deletes, expire, evict. All index-driven, so fast at any size;
        // the directory scan for orphans runs in the background.
        guard !readOnly else { return }
        try files.installChangeLog()
        // What a stopped daemon journaled goes into the index before anything looks for orphans (a journal that
        // cannot be written now stays for the next opening; its files are named by the orphan check too).
        do { try replayDriveJournal() } catch {
            logger.error("the drive's commit journal could not be written into the index (tried again at the next opening): \(error)")
        }
        // A pull sees the local changes waiting in the drive's journal (their queued uploads keep them).
        outline.beforeUpdate.withLock { $0 = Callback { [weak self] in _ = self?.drainDriveCommits() } }
        files.journaled.withLock { journaled in
            journaled = Callback { [weak self] name in
                // (The store closed while a holder keeps its files: a file it cannot look up stays.)
                guard let self else { return true }
                do { try self.replayDriveJournal() } catch { self.logger.error("the drive's commit journal: \(error)") }
                return self.isJournaled(name)
            }
        }
        files.startMaintenance()
    }

    /// The background checkpointer, woken by `trigger`; nil (commits checkpoint as SQLite's automatic
    /// checkpoint would) if its connection cannot be opened.
    private static func startCheckpointer(_ path: String, _ trigger: IndexCheckpointer.Trigger, logger: Logger) -> IndexCheckpointer? {
        do {
            return try IndexCheckpointer(path: path, trigger: trigger, logger: logger)
        } catch {
            logger.warning("index checkpoints stay in the writers' commits: \(error)")
            return nil
        }
    }

    /// Flushes the index's last commits to the disk (`StoreIndex.sync`): an `fsync` of a drive folder.
    package func syncIndex() {
        index.sync()
    }

    /// When this instance last changed the drive (a file's commit, an entry made, moved, removed or changed):
    /// the uploader rests after it as after a queued change (`QueueUploader`), so that an `rm -rf` or a
    /// `git checkout` that queues nothing new still has the cores and the index to itself. Nil: not yet.
    package var lastDriveChange: Date? {
        let milliseconds = lastDriveChangeMilliseconds.load(ordering: .relaxed)
        return milliseconds == 0 ? nil : Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    func noteDriveChange() {
        lastDriveChangeMilliseconds.store(Int64(clock.now.timeIntervalSince1970 * 1000), ordering: .relaxed)
    }

    /// Runs a read on the index (`StoreIndex.read`).
    func read<T>(_ body: (Database) throws -> T) throws(DarkDiskError) -> T {
        try index.read(body)
    }

    /// `StoreIndex.quickRead`.
    func quickRead<T>(_ body: (Database) throws -> T) throws(DarkDiskError) -> T {
        try index.quickRead(body)
    }

    /// `StoreIndex.withLookupConnection`.
    func withLookupConnection<T>(_ body: (DriveLookupConnection) throws(DriveLookupConnection.Failure) -> T) -> T? {
        index.withLookupConnection(body)
    }

    /// Runs a write transaction on the index (`StoreIndex.write`).
    func write<T>(_ body: (Database) throws -> T) throws(DarkDiskError) -> T {
        try index.write(body)
    }

    /// Opens the index; on a full disk (SQLite cannot even make its shared-memory file) the reserve goes first.
    private static func openIndex(_ location: StoreLocation, readOnly: Bool, counter: IndexStatistics.Counter,
                                  trigger: IndexCheckpointer.Trigger?, cipher: IndexCipher?) throws(DarkDiskError) -> DatabasePool {
        do { return try IndexDatabase.open(path: location.indexPath, readOnly: readOnly, counter: counter, trigger: trigger, cipher: cipher) } catch {
            guard !readOnly, error.errno == ENOSPC || error.message.contains("disk is full") || error.message.contains("I/O error"),
                  SpaceReserve.release(in: location.dataDirectory) else { throw error }
            return try IndexDatabase.open(path: location.indexPath, readOnly: readOnly, counter: counter, trigger: trigger, cipher: cipher)
        }
    }

    /// A text setting of the store (e.g. its remote URL).
    @available(*, noasync)
    public func text(_ key: String) throws(DarkDiskError) -> String? {
        try index.text(key)
    }

    @available(*, noasync)
    public func setText(_ value: String, for key: String) throws(DarkDiskError) {
        try index.setText(value, for: key)
    }

    /// Forgets a text setting.
    @available(*, noasync)
    public func removeText(_ key: String) throws(DarkDiskError) {
        try write { db in try db.execute(sql: "DELETE FROM storeText WHERE key = ?", arguments: [key]) }
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
