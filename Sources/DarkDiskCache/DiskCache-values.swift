import Foundation

extension DiskCache {
    /// The value stored for `key`, or `nil` when there is none, it went unused for longer than `ageLimit`, or it was damaged
    /// on disk (then it is removed). Records the access for least-recently-used trims.
    public func data(forKey key: String) throws(DiskCacheError) -> Data? {
        // A writer may replace the entry between the read and the removal of a damaged one: read again then.
        for _ in 0..<8 {
            switch try folder.read(key, notUnusedSince: cutoff, now: secondsNow) {
            case .hit(let data):
                return data
            case .miss:
                return nil
            case .expired(let row), .corrupt(let row):
                let hooks = hooks
                if try folder.removeIfUnchanged(key, row, willRemove: { fire(hooks.willRemove, $0) }) {
                    fire(hooks.didRemove, key)
                    return nil
                }
            }
        }
        return nil
    }

    /// The value stored for `key` decoded as `type` (stored by `set(_:forKey:)` as JSON); `nil` on a miss.
    /// Throws `.coding` when the stored value is not a `type`.
    public func value<Value: Decodable>(_ type: Value.Type, forKey key: String) throws(DiskCacheError) -> Value? {
        guard let data = try data(forKey: key) else { return nil }
        do {
            return try JSONDecoder().decode(Value.self, from: data)
        } catch {
            throw DiskCacheError(.coding, "the value for \(key.debugDescription.prefix(80)) is not a \(Value.self): \(error)")
        }
    }

    /// Whether a value for `key` is stored (and not unused for longer than `ageLimit`), without reading it.
    public func containsValue(forKey key: String) throws(DiskCacheError) -> Bool {
        try folder.contains(key, notUnusedSince: cutoff)
    }

    /// Stores `data` for `key`, replacing any value. When the total then exceeds `byteLimit`, least recently
    /// used entries are removed before this returns (the new one too, if it alone is over the limit).
    /// A crash at any point leaves the old value or the new one.
    public func set(_ data: Data, forKey key: String) throws(DiskCacheError) {
        let hooks = hooks
        fire(hooks.willAdd, key)
        let evicted = try folder.write(data, forKey: key, now: secondsNow, byteLimit: byteLimit, willRemove: { fire(hooks.willRemove, $0) })
        fire(hooks.didAdd, key)
        for entry in evicted { fire(hooks.didRemove, entry.key) }
    }

    /// Stores any `Encodable` value for `key`, as JSON (read it back with `value(_:forKey:)`).
    public func set<Value: Encodable>(_ value: Value, forKey key: String) throws(DiskCacheError) {
        let data: Data
        do {
            data = try JSONEncoder().encode(value)
        } catch {
            throw DiskCacheError(.coding, "cannot encode the value for \(key.debugDescription.prefix(80)): \(error)")
        }
        try set(data, forKey: key)
    }

    /// Removes the value for `key`, if any (the hooks run only when there was one).
    public func removeValue(forKey key: String) throws(DiskCacheError) {
        let hooks = hooks
        if try folder.remove(key, willRemove: { fire(hooks.willRemove, $0) }) {
            fire(hooks.didRemove, key)
        }
    }

    /// Removes every entry. The value files are moved to a trash folder in one rename and deleted in the
    /// background, so this is quick at any size; it waits for running `withFileURL` closures to end.
    public func removeAll() throws(DiskCacheError) {
        let hooks = hooks
        fire(hooks.willRemoveAll)
        try folder.removeAll()
        fire(hooks.didRemoveAll)
    }

    /// Every entry's key, sizes and dates (not the values), least recently accessed first; entries unused
    /// for longer than `ageLimit` are left out. A snapshot: the cache may change while you go through it.
    public func entries() throws(DiskCacheError) -> [DiskCacheEntry] {
        try folder.entries(notUnusedSince: cutoff)
    }
}
