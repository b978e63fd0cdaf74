import Foundation
import DarkDiskSync

/// An in-memory cache of images (ZeroDark.cloud's NSCache), a strict least-recently-used list with a cost limit:
/// each entry costs its encoded bytes; inserting beyond `totalCostLimit` or `countLimit` evicts the least
/// recently used entries (a lookup that hits makes an entry the most recent) until both hold. An entry
/// costing more than `maximumEntryFraction` of the cost limit is not cached at all, so one large image
/// cannot empty the cache. A negative result (no image) is cached with a small fixed cost until it expires.
///
/// A dictionary and a doubly linked list (in arrays, by index) behind one lock: every operation is O(1)
/// except the flushes, which scan.
public final class MemoryImageCache: Sendable {
    /// What a cache slot holds: an image, or the definite answer "no image" (until `expires`), and where it
    /// came from (to tell, when the store changes, whether it is still current).
    struct Entry: Sendable {
        var image: ProcessedImage?
        /// The stored file the image was made from (`StoredFile.fileID`), if any.
        var sourceFileID: Int64?
        /// For avatars: the identity the image belongs to (a display-identity fetch resolves one).
        var identityID: String?
        /// Negative entries only: when the answer stops being trusted.
        var expires: ContinuousClock.Instant?
    }

    /// The cost of a negative entry.
    static let negativeEntryCost = 64

    private struct Slot {
        var key: ImageCacheKey
        var entry: Entry
        var cost: Int
        var newer: Int  // towards the most recent, -1 at the head
        var older: Int  // towards the least recent, -1 at the tail
    }

    private struct State {
        var index: [ImageCacheKey: Int] = [:]
        var slots: [Slot] = []
        var free: [Int] = []
        var newest = -1
        var oldest = -1
        var totalCost = 0
        var totalCostLimit: Int
        var countLimit: Int
        var maximumEntryFraction: Double

        mutating func unlink(_ i: Int) {
            let (newer, older) = (slots[i].newer, slots[i].older)
            if newer >= 0 { slots[newer].older = older } else { newest = older }
            if older >= 0 { slots[older].newer = newer } else { oldest = newer }
        }

        mutating func pushNewest(_ i: Int) {
            slots[i].newer = -1
            slots[i].older = newest
            if newest >= 0 { slots[newest].newer = i }
            newest = i
            if oldest < 0 { oldest = i }
        }

        mutating func remove(_ i: Int) {
            unlink(i)
            index.removeValue(forKey: slots[i].key)
            totalCost -= slots[i].cost
            slots[i].entry = Entry()
            free.append(i)
        }

        mutating func trim() {
            while oldest >= 0 && (totalCost > totalCostLimit || (countLimit > 0 && index.count > countLimit)) {
                remove(oldest)
            }
        }
    }

    private let state: Locked<State>
    /// What entries' `expires` are compared with.
    public let clock: ExpiryClock

    /// A cache of at most `totalCostLimit` bytes (default 5 MiB) and `countLimit` entries (0: no limit);
    /// entries with an `expires` instant go once `clock` passes it.
    public init(totalCostLimit: Int = 5 * 1024 * 1024, countLimit: Int = 0, maximumEntryFraction: Double = 0.25,
                clock: ExpiryClock = .continuous) {
        self.clock = clock
        state = Locked(State(totalCostLimit: max(0, totalCostLimit), countLimit: max(0, countLimit),
                            maximumEntryFraction: min(1, max(0, maximumEntryFraction))))
    }

    /// The most bytes the entries may cost together; lowering it evicts at once.
    public var totalCostLimit: Int {
        get { state.withLock { $0.totalCostLimit } }
        set { state.withLock { $0.totalCostLimit = max(0, newValue); $0.trim() } }
    }

    /// The most entries kept; 0 means no limit (the default). Lowering it evicts at once.
    public var countLimit: Int {
        get { state.withLock { $0.countLimit } }
        set { state.withLock { $0.countLimit = max(0, newValue); $0.trim() } }
    }

    /// An entry costing more than this fraction of `totalCostLimit` is not cached (default 0.25).
    public var maximumEntryFraction: Double {
        get { state.withLock { $0.maximumEntryFraction } }
        set { state.withLock { $0.maximumEntryFraction = min(1, max(0, newValue)) } }
    }

    /// The bytes the entries cost now.
    public var totalCost: Int { state.withLock { $0.totalCost } }

    /// The number of entries now (images and negative results).
    public var count: Int { state.withLock { $0.index.count } }

    /// The keys from most to least recently used.
    public var keys: [ImageCacheKey] {
        state.withLock { state in
            var keys: [ImageCacheKey] = []
            var i = state.newest
            while i >= 0 { keys.append(state.slots[i].key); i = state.slots[i].older }
            return keys
        }
    }

    /// Whether `key` has a live entry (without making it more recent).
    public func contains(_ key: ImageCacheKey) -> Bool {
        let now = clock.now()  // read before the lock: a clock may have a lock of its own
        return state.withLock { state in
            guard let i = state.index[key] else { return false }
            if let expires = state.slots[i].entry.expires, expires <= now { return false }
            return true
        }
    }

    /// Empties the cache.
    public func removeAll() {
        state.withLock { state in
            state = State(totalCostLimit: state.totalCostLimit, countLimit: state.countLimit,
                          maximumEntryFraction: state.maximumEntryFraction)
        }
    }

    /// Removes the entries whose key matches `predicate`; returns how many went. The predicate runs under
    /// the cache's lock: it must not use this cache.
    @discardableResult
    public func removeAll(where predicate: (ImageCacheKey) -> Bool) -> Int {
        removeEntries { key, _ in predicate(key) }
    }

    /// The entry for `key`, made the most recent; an expired negative entry is removed and missed.
    func entry(for key: ImageCacheKey) -> Entry? {
        let now = clock.now()  // read before the lock: a clock may have a lock of its own
        return state.withLock { state in
            guard let i = state.index[key] else { return nil }
            if let expires = state.slots[i].entry.expires, expires <= now {
                state.remove(i)
                return nil
            }
            if state.newest != i {
                state.unlink(i)
                state.pushNewest(i)
            }
            return state.slots[i].entry
        }
    }

    /// Stores `entry` as the most recent, replacing any entry for `key`, then evicts the least recently used
    /// until the limits hold. Returns false (and caches nothing, dropping any older entry for the key) if
    /// the entry is larger than `maximumEntryFraction` of the cost limit.
    @discardableResult
    func insert(_ entry: Entry, for key: ImageCacheKey) -> Bool {
        let cost = entry.image?.cost ?? Self.negativeEntryCost
        return state.withLock { state in
            if let existing = state.index[key] { state.remove(existing) }
            guard Double(cost) <= Double(state.totalCostLimit) * state.maximumEntryFraction else { return false }
            let slot = Slot(key: key, entry: entry, cost: cost, newer: -1, older: -1)
            let i: Int
            if let reused = state.free.popLast() {
                state.slots[reused] = slot
                i = reused
            } else {
                state.slots.append(slot)
                i = state.slots.count - 1
            }
            state.index[key] = i
            state.totalCost += cost
            state.pushNewest(i)
            state.trim()
            return true
        }
    }

    /// Removes the entries for which `predicate` holds.
    @discardableResult
    func removeEntries(where predicate: (ImageCacheKey, Entry) -> Bool) -> Int {
        state.withLock { state in
            let doomed = state.index.values.filter { predicate(state.slots[$0].key, state.slots[$0].entry) }
            for i in doomed { state.remove(i) }
            return doomed.count
        }
    }
}
