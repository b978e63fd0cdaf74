import DarkDiskCrypto
import Foundation
import DarkDiskSync

/// A thread-safe key/value store on the file system (TMDiskCache for Swift on Linux), with a byte limit, an age
/// limit, trims by date and size, event hooks and a trash.
///
/// Every instance with the same name and root path shares the same data, in one process (one shared index
/// connection) and across processes (SQLite's locking; each value file is written aside and renamed in place).
/// Small values (up to 32 KiB) live in the index, larger ones in files. Start-up reads nothing but the index
/// header, so it is immediate at any number of entries, and `byteCount` is exact from the first call: a running
/// total is kept in the index in the same transaction as every change.
///
/// Values are `Data` or any `Codable` type (stored as JSON). Keys are any string: file names are the SHA-256
/// of the key, so a key of any length or character works. A value that is missing, older than `ageLimit`,
/// damaged on disk or half-written is removed and reported as a miss (`nil`), never a crash or wrong bytes.
///
/// Methods come in a synchronous form (blocking the calling thread) and an `async` form (run on a background
/// queue, never blocking Swift's cooperative pool).
public final class DiskCache: Sendable {
    /// A hook about one entry: the cache and the entry's key.
    public typealias ObjectHook = @Sendable (_ cache: DiskCache, _ key: String) -> Void
    /// A hook about the whole cache.
    public typealias CacheHook = @Sendable (_ cache: DiskCache) -> Void

    /// The cache's name; instances with the same name (and root path) share their data.
    public let name: String
    /// The folder holding this cache's index and files. Do not change anything in it.
    public let cacheURL: URL
    /// The serial queue every hook of this instance runs on, in the order of the events. The operation that
    /// triggers a hook does not wait for it, so a hook may call the cache; `will` hooks are queued before the
    /// change is made, `did` hooks once it is committed.
    public let hookQueue: DispatchQueue

    /// The clock that dates sets and reads (for `ageLimit`, `trim(toDate:)` and least-recently-used order).
    public let clock: any StoreClock

    let folder: CacheFolder

    struct Hooks {
        var willAdd: ObjectHook?
        var didAdd: ObjectHook?
        var willRemove: ObjectHook?
        var didRemove: ObjectHook?
        var willRemoveAll: CacheHook?
        var didRemoveAll: CacheHook?
    }
    struct Settings {
        var byteLimit = 0
        var ageLimit: TimeInterval = 0
        var ageTimerGeneration: UInt64 = 0
        var hooks = Hooks()
    }
    let settings = Locked(Settings())

    /// The default root: `$XDG_CACHE_HOME`, else `~/.cache`.
    public static var defaultRootPath: String {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") { return xdg }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.cache"
    }

    /// A cache named `shared` under the default root (under the temporary folder if that cannot be created).
    public static let shared: DiskCache = {
        if let cache = try? DiskCache(name: "shared") { return cache }
        do {
            return try DiskCache(name: "shared", rootPath: NSTemporaryDirectory())
        } catch {
            fatalError("DiskCache.shared: \(error)")
        }
    }()

    /// Opens (creating if needed) the cache `name` under `rootPath` (default `$XDG_CACHE_HOME`), in the folder
    /// `darkdisk.DiskCache.<name>` (a name with characters other than letters, digits, `.`, `_` and `-`, or
    /// longer than 100 bytes, is hashed into the folder name). Hooks run on `hookQueue` (default: a new serial
    /// queue); sets and reads are dated by `clock`. Costs the same at any number of entries: nothing is scanned.
    public init(name: String, rootPath: String? = nil, hookQueue: DispatchQueue? = nil,
                clock: any StoreClock = SystemClock()) throws(DiskCacheError) {
        guard !name.isEmpty else { throw DiskCacheError(.invalidArgument, "a cache name cannot be empty") }
        let root = rootPath ?? Self.defaultRootPath
        do {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        } catch {
            throw DiskCacheError(.io, "cannot create the cache root \(root): \(error.localizedDescription)")
        }
        let safe = name.utf8.count <= 100 && name != "." && name != ".."
            && name.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0)) }
        let folderName = "darkdisk.DiskCache." + (safe ? name : Digest.sha256(Array(name.utf8)).map { String(format: "%02x", $0) }.joined())
        let absoluteRoot = root.hasPrefix("/") ? root : FileManager.default.currentDirectoryPath + "/" + root
        let path = URL(fileURLWithPath: absoluteRoot).standardizedFileURL.resolvingSymlinksInPath().path + "/" + folderName
        self.name = name
        self.cacheURL = URL(fileURLWithPath: path, isDirectory: true)
        self.clock = clock
        self.hookQueue = hookQueue ?? DispatchQueue(label: "darkdisk.DiskCache.\(name).hooks", qos: .utility)
        self.folder = try CacheFolder.open(path: path)
    }

    // MARK: - Limits and counts

    /// The bytes the cache's entries occupy on disk (value files' allocated blocks plus small values' lengths),
    /// exact at any time, including right after start-up, and including other processes' changes.
    public var byteCount: Int {
        get throws(DiskCacheError) { try folder.totals().bytes }
    }

    /// The number of entries.
    public var entryCount: Int {
        get throws(DiskCacheError) { try folder.totals().count }
    }

    /// The most bytes the cache may hold; `0` (the default) means no limit. Checked on every set: least recently
    /// used entries are removed in the same transaction, so the cache is never left above it. Setting a lower
    /// limit trims at once. Like every setting, it belongs to this instance: another instance (or process)
    /// with no limit may fill the folder beyond it, until this instance's next set or trim.
    public var byteLimit: Int {
        get { settings.withLock { $0.byteLimit } }
        set {
            let limit = max(0, newValue)
            settings.withLock { $0.byteLimit = limit }
            if limit > 0 { _ = try? trim(toSizeByDate: limit) }
        }
    }

    /// The most seconds an entry may go unused (neither set nor read), as TMDiskCache's `ageLimit`: a value
    /// read often never expires while it is in use; `0` (the default) means no limit. An expired entry is
    /// never returned (a get removes it and misses), and a timer removes expired entries every `ageLimit / 2`
    /// seconds (at least every minute, at most four times a second).
    public var ageLimit: TimeInterval {
        get { settings.withLock { $0.ageLimit } }
        set {
            let limit = max(0, newValue)
            let generation = settings.withLock { s in
                s.ageLimit = limit
                s.ageTimerGeneration &+= 1
                return s.ageTimerGeneration
            }
            if limit > 0 { scheduleAgeTrim(generation, after: 0) }
        }
    }

    /// The oldest last use (set or read) an entry may have under `ageLimit`, or `nil` when there is no limit.
    var cutoff: Double? {
        let limit = ageLimit
        return limit > 0 ? secondsNow - limit : nil
    }

    /// `clock`'s time in seconds since 1970, as the index keeps times.
    var secondsNow: Double { clock.now.timeIntervalSince1970 }

    private func scheduleAgeTrim(_ generation: UInt64, after delay: TimeInterval) {
        Self.timerQueue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self else { return }
            let (current, limit) = self.settings.withLock { ($0.ageTimerGeneration, $0.ageLimit) }
            guard current == generation, limit > 0 else { return }
            _ = try? self.trimExpired()
            self.scheduleAgeTrim(generation, after: min(max(limit / 2, 0.25), 60))
        }
    }

    static let timerQueue = DispatchQueue(label: "darkdisk.DiskCache.timer", qos: .utility)

    // MARK: - Hooks

    /// Called (on `hookQueue`) before an entry is added or replaced.
    public var willAddObject: ObjectHook? {
        get { hook(\.willAdd) }
        set { setHook(\.willAdd, newValue) }
    }
    /// Called (on `hookQueue`) after an entry was added or replaced.
    public var didAddObject: ObjectHook? {
        get { hook(\.didAdd) }
        set { setHook(\.didAdd, newValue) }
    }
    /// Called (on `hookQueue`) before an entry is removed: by `removeValue`, a trim, the limits, or because it
    /// was found damaged.
    public var willRemoveObject: ObjectHook? {
        get { hook(\.willRemove) }
        set { setHook(\.willRemove, newValue) }
    }
    /// Called (on `hookQueue`) after an entry was removed.
    public var didRemoveObject: ObjectHook? {
        get { hook(\.didRemove) }
        set { setHook(\.didRemove, newValue) }
    }
    /// Called (on `hookQueue`) before `removeAll` empties the cache.
    public var willRemoveAllObjects: CacheHook? {
        get { hook(\.willRemoveAll) }
        set { setHook(\.willRemoveAll, newValue) }
    }
    /// Called (on `hookQueue`) after `removeAll` emptied the cache.
    public var didRemoveAllObjects: CacheHook? {
        get { hook(\.didRemoveAll) }
        set { setHook(\.didRemoveAll, newValue) }
    }

    private func hook<Hook: Sendable>(_ field: KeyPath<Hooks, Hook?> & Sendable) -> Hook? {
        settings.withLock { $0.hooks[keyPath: field] }
    }

    private func setHook<Hook: Sendable>(_ field: WritableKeyPath<Hooks, Hook?> & Sendable, _ value: Hook?) {
        settings.withLock { $0.hooks[keyPath: field] = value }
    }

    func fire(_ hook: ObjectHook?, _ key: String) {
        guard let hook else { return }
        hookQueue.async { hook(self, key) }
    }

    func fire(_ hook: CacheHook?) {
        guard let hook else { return }
        hookQueue.async { hook(self) }
    }

    var hooks: Hooks { settings.withLock { $0.hooks } }
}
