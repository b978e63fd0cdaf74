import DarkDiskSync
import Foundation

extension DiskCache {
    /// The `async` forms of the cache's calls: `try await cache.async.data(forKey:)`. A spelling of their
    /// own, so that one `await` in a closure never silently turns the closure's plain calls into async ones.
    public var async: AsyncDiskCache { AsyncDiskCache(cache: self) }
}

/// The `async` forms of a `DiskCache`'s calls (`cache.async`): each runs its synchronous form on the shared
/// blocking pool, so a caller on Swift's cooperative pool never blocks a pool thread on disk I/O or another
/// process' lock. Same names and results as the synchronous forms.
public struct AsyncDiskCache: Sendable {
    /// The cache these are the async forms of.
    public let cache: DiskCache

    private func background<Result: Sendable>(_ body: @escaping @Sendable () throws(DiskCacheError) -> Result) async throws(DiskCacheError) -> Result {
        try await BlockingPool.shared.run(body)
    }

    /// The value stored for `key`, or `nil` (see the synchronous form).
    public func data(forKey key: String) async throws(DiskCacheError) -> Data? {
        try await background { () throws(DiskCacheError) in try cache.data(forKey: key) }
    }

    /// The value stored for `key` decoded as `type`, or `nil` (see the synchronous form).
    public func value<Value: Decodable & Sendable>(_ type: Value.Type, forKey key: String) async throws(DiskCacheError) -> Value? {
        try await background { () throws(DiskCacheError) in try cache.value(type, forKey: key) }
    }

    /// Whether a value for `key` is stored (see the synchronous form).
    public func containsValue(forKey key: String) async throws(DiskCacheError) -> Bool {
        try await background { () throws(DiskCacheError) in try cache.containsValue(forKey: key) }
    }

    /// Stores `data` for `key` (see the synchronous form).
    public func set(_ data: Data, forKey key: String) async throws(DiskCacheError) {
        try await background { () throws(DiskCacheError) in try cache.set(data, forKey: key) }
    }

    /// Stores any `Encodable` value for `key`, as JSON (see the synchronous form).
    public func set<Value: Encodable & Sendable>(_ value: Value, forKey key: String) async throws(DiskCacheError) {
        try await background { () throws(DiskCacheError) in try cache.set(value, forKey: key) }
    }

    /// Removes the value for `key`, if any.
    public func removeValue(forKey key: String) async throws(DiskCacheError) {
        try await background { () throws(DiskCacheError) in try cache.removeValue(forKey: key) }
    }

    /// Removes every entry through the trash (see the synchronous form).
    public func removeAll() async throws(DiskCacheError) {
        try await background { () throws(DiskCacheError) in try cache.removeAll() }
    }

    /// Every entry's key, sizes and dates (see the synchronous form).
    public func entries() async throws(DiskCacheError) -> [DiskCacheEntry] {
        try await background { () throws(DiskCacheError) in try cache.entries() }
    }

    /// Removes the entries not accessed since `date`.
    public func trim(toDate date: Date) async throws(DiskCacheError) {
        try await background { () throws(DiskCacheError) in try cache.trim(toDate: date) }
    }

    /// Removes entries, largest first, until the cache holds at most `byteCount` bytes.
    public func trim(toSize byteCount: Int) async throws(DiskCacheError) {
        try await background { () throws(DiskCacheError) in try cache.trim(toSize: byteCount) }
    }

    /// Removes entries, least recently used first, until the cache holds at most `byteCount` bytes.
    public func trim(toSizeByDate byteCount: Int) async throws(DiskCacheError) {
        try await background { () throws(DiskCacheError) in try cache.trim(toSizeByDate: byteCount) }
    }

    /// Runs `body` with the URL of `key`'s value file, held in place until `body` returns (see the synchronous
    /// form); `nil` without calling it when there is no such value.
    public func withFileURL<Result: Sendable>(forKey key: String,
                                              _ body: @Sendable (URL) async throws -> Result) async throws -> Result? {
        let cache = self.cache
        guard let access = try await background({ () throws(DiskCacheError) in try cache.acquireFile(forKey: key) }) else { return nil }
        defer { access.release() }
        return try await body(access.url)
    }
}
