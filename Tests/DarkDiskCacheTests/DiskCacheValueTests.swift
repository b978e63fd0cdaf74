@testable import DarkDiskCache
import Foundation
import Testing

/// Values, keys, sharing between instances, persistence.
@Suite struct DiskCacheValueTests {
    struct Profile: Codable, Equatable, Sendable {
        var name: String
        var scores: [Int]
    }

    @Test func setGetRemoveDataSmallAndLarge() throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        let small = bytes(1000), large = bytes(300_000, seed: 2)
        try cache.set(small, forKey: "small")
        try cache.set(large, forKey: "large")
        #expect(try cache.data(forKey: "small") == small)
        #expect(try cache.data(forKey: "large") == large)
        #expect(try cache.data(forKey: "absent") == nil)
        #expect(try cache.containsValue(forKey: "large"))
        try cache.removeValue(forKey: "large")
        #expect(try cache.data(forKey: "large") == nil)
        #expect(try !cache.containsValue(forKey: "large"))
        #expect(try cache.entryCount == 1)
        // Only the remaining small value (kept in the index): no value file left behind.
        #expect(settledValueFileCount(cache, expected: 0) == 0)
    }

    @Test func replacingSwitchesBetweenIndexAndFile() throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        try cache.set(bytes(100_000), forKey: "k")
        try cache.set(bytes(10, seed: 3), forKey: "k")
        #expect(try cache.data(forKey: "k") == bytes(10, seed: 3))
        #expect(settledValueFileCount(cache, expected: 0) == 0)
        try cache.set(bytes(70_000, seed: 4), forKey: "k")
        try cache.set(bytes(80_000, seed: 5), forKey: "k")
        #expect(try cache.data(forKey: "k") == bytes(80_000, seed: 5))
        #expect(settledValueFileCount(cache, expected: 1) == 1)
        #expect(try cache.byteCount == entriesTotal(cache))
    }

    @Test func codableValues() throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        let profile = Profile(name: "Zoë", scores: [3, 1, 4])
        try cache.set(profile, forKey: "profile")
        try cache.set(42, forKey: "answer")
        try cache.set(["a": [1.5]], forKey: "dictionary")
        #expect(try cache.value(Profile.self, forKey: "profile") == profile)
        #expect(try cache.value(Int.self, forKey: "answer") == 42)
        #expect(try cache.value([String: [Double]].self, forKey: "dictionary") == ["a": [1.5]])
        #expect(try cache.value(Profile.self, forKey: "nothing") == nil)
        #expect(throws: DiskCacheError.self) { try cache.value(Profile.self, forKey: "answer") }
        #expect(try cache.value(Int.self, forKey: "answer") == 42, "a type mismatch does not remove the value")
    }

    @Test(arguments: [
        String(repeating: "long-key/", count: 200),            // 1,800 bytes: far past the 255-byte file name limit
        String(repeating: "é", count: 300),                    // 600 bytes of UTF-8
        "a/b/../../c", "..", ".", "", " ", "\u{0}nul\u{0}", "line\nbreak", "emoji 🚀🧪", "*?<>|\\:\"'",
    ])
    func anyKeyWorks(key: String) throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        try cache.set(bytes(64, seed: 9), forKey: key)
        try cache.set(bytes(50_000, seed: 7), forKey: key + "-file")
        #expect(try cache.data(forKey: key) == bytes(64, seed: 9))
        #expect(try cache.data(forKey: key + "-file") == bytes(50_000, seed: 7))
        #expect(try Set(cache.entries().map(\.key)) == [key, key + "-file"])
        let read = try cache.withFileURL(forKey: key) { try Data(contentsOf: $0) }
        #expect(read == bytes(64, seed: 9))
        try cache.removeValue(forKey: key)
        #expect(try cache.data(forKey: key) == nil)
    }

    @Test func keysDifferingOnlyAfterManyBytesStayApart() throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        let base = String(repeating: "x", count: 5000)
        try cache.set(bytes(40_000, seed: 1), forKey: base + "1")
        try cache.set(bytes(40_000, seed: 2), forKey: base + "2")
        #expect(try cache.data(forKey: base + "1") == bytes(40_000, seed: 1))
        #expect(try cache.data(forKey: base + "2") == bytes(40_000, seed: 2))
    }

    @Test func instancesWithOneNameShareDataAndOthersDoNot() throws {
        let root = try TemporaryRoot()
        let a = try root.cache("shared-name"), b = try root.cache("shared-name"), other = try root.cache("other")
        try a.set(bytes(100), forKey: "k")
        #expect(try b.data(forKey: "k") == bytes(100))
        #expect(try other.data(forKey: "k") == nil)
        try b.removeValue(forKey: "k")
        #expect(try a.data(forKey: "k") == nil)
        #expect(a.cacheURL == b.cacheURL && a.cacheURL != other.cacheURL)
    }

    @Test func oddCacheNamesGetAFolderOfTheirOwn() throws {
        let root = try TemporaryRoot()
        let slash = try root.cache("images/avatars"), long = try root.cache(String(repeating: "n", count: 400))
        #expect(slash.cacheURL.deletingLastPathComponent().path == URL(fileURLWithPath: root.path).resolvingSymlinksInPath().path)
        try slash.set(bytes(10), forKey: "k")
        try long.set(bytes(20), forKey: "k")
        #expect(try slash.data(forKey: "k") == bytes(10))
        #expect(try long.data(forKey: "k") == bytes(20))
        #expect(throws: DiskCacheError.self) { try DiskCache(name: "", rootPath: root.path) }
    }

    @Test func defaultRootIsUnderXDGCacheHome() throws {
        let expected = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()) + "/.cache"
        #expect(DiskCache.defaultRootPath == expected)
        let shared = DiskCache.shared
        #expect(shared.name == "shared")
        #expect(shared === DiskCache.shared)
        try shared.set(bytes(8), forKey: "darkdisk-test-\(getpid())")
        #expect(try shared.data(forKey: "darkdisk-test-\(getpid())") == bytes(8))
        try shared.removeValue(forKey: "darkdisk-test-\(getpid())")
    }

    @Test func valuesSurviveAReopenFromDisk() throws {
        let root = try TemporaryRoot()
        do {
            let cache = try root.cache()
            try cache.set(bytes(500), forKey: "small")
            try cache.set(bytes(90_000), forKey: "large")
        }
        // A new process sees them (the tool opens the folder afresh).
        let cache = try root.cache()
        #expect(try cache.data(forKey: "small") == bytes(500))
        #expect(try cache.data(forKey: "large") == bytes(90_000))
        let run = try Tool.run(["verify", root.path, "test"])
        #expect(run.output.contains("wrong value for"), "the tool checks values of its own pattern: these are not")
        #expect(run.status != 0)
    }

    /// The two families have their own spellings. In an async function the plain calls
    /// stay synchronous (no `await`: this would not compile if an async overload of the same name came
    /// back), and `cache.async` gives the async forms, which see the same entries.
    @Test func plainCallsStaySynchronousInAsyncCode() async throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        try cache.set(bytes(300), forKey: "plain")
        let plain = try cache.data(forKey: "plain")
        let viaAsync = try await cache.async.data(forKey: "plain")
        #expect(plain == viaAsync && plain == bytes(300))
        #expect(try cache.containsValue(forKey: "plain") && cache.entries().count == 1)
    }

    @Test func asyncForms() async throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        try await cache.async.set(bytes(2000), forKey: "a")
        try await cache.async.set(Profile(name: "p", scores: []), forKey: "p")
        #expect(try await cache.async.data(forKey: "a") == bytes(2000))
        #expect(try await cache.async.value(Profile.self, forKey: "p") == Profile(name: "p", scores: []))
        #expect(try await cache.async.containsValue(forKey: "a"))
        #expect(try await cache.async.entries().count == 2)
        let size = try await cache.async.withFileURL(forKey: "a") { url in
            try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int
        }
        #expect(size == 2000)
        try await cache.async.removeValue(forKey: "a")
        #expect(try await cache.async.data(forKey: "a") == nil)
        try await cache.async.trim(toDate: Date().addingTimeInterval(3600))
        #expect(try await cache.async.entries().isEmpty)
        try await cache.async.set(bytes(50_000), forKey: "b")
        try await cache.async.trim(toSize: 0)
        try await cache.async.set(bytes(50_000), forKey: "c")
        try await cache.async.trim(toSizeByDate: 0)
        try await cache.async.set(bytes(50_000), forKey: "d")
        try await cache.async.removeAll()
        #expect(try cache.entryCount == 0 && cache.byteCount == 0)
    }
}
