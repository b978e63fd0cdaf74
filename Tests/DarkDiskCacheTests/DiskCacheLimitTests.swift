@testable import DarkDiskCache
import DarkDiskTestSupport
import Foundation
import Testing

/// `byteCount`, `byteLimit`, `ageLimit` and the trims.
@Suite struct DiskCacheLimitTests {
    @Test func byteCountIsExactAndCountsAllocatedBlocks() throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        #expect(try cache.byteCount == 0)
        try cache.set(bytes(1000), forKey: "inline")
        #expect(try cache.byteCount == 1000)
        try cache.set(bytes(40_001), forKey: "file")
        let url = cache.cacheURL.appendingPathComponent("files")
        let name = try FileManager.default.contentsOfDirectory(atPath: url.path)[0]
        var info = stat()
        stat(url.path + "/" + name, &info)
        #expect(try cache.byteCount == 1000 + Int(info.st_blocks) * 512)
        #expect(Int(info.st_blocks) * 512 >= 40_001)
        try cache.set(bytes(10), forKey: "inline")
        #expect(try cache.byteCount == 10 + Int(info.st_blocks) * 512)
        #expect(try cache.byteCount == entriesTotal(cache))
    }

    @Test func byteCountIsExactRightAfterStartUp() throws {
        let root = try TemporaryRoot()
        var expected = 0
        do {
            let cache = try root.cache()
            for i in 0..<200 { try cache.set(bytes(i % 4 == 0 ? 35_000 + i : 500 + i, seed: UInt64(i)), forKey: "k\(i)") }
            expected = try cache.byteCount
            #expect(try expected == entriesTotal(cache))
        }
        // A fresh process answers at once, with no scan.
        let reopened = try root.cache()
        #expect(try reopened.byteCount == expected)
        #expect(try reopened.entryCount == 200)
    }

    @Test func byteLimitEvictsLeastRecentlyUsedOnEverySet() throws {
        let root = try TemporaryRoot()
        let clock = ManualClock()
        let cache = try root.cache(clock: clock)
        cache.byteLimit = 10_000
        for i in 0..<5 { try cache.set(bytes(2000, seed: UInt64(i)), forKey: "k\(i)"); clock.advance(by: 1) }
        #expect(try cache.byteCount == 10_000)
        _ = try cache.data(forKey: "k0")    // k0 is now the most recently used; k1 the least
        clock.advance(by: 1)
        try cache.set(bytes(2000, seed: 9), forKey: "k5")
        #expect(try cache.byteCount <= 10_000)
        #expect(try cache.data(forKey: "k1") == nil, "the least recently used goes first")
        #expect(try cache.data(forKey: "k0") != nil, "a read protects an entry")
        #expect(try cache.data(forKey: "k5") != nil)
        for i in 0..<100 {
            try cache.set(bytes(300 + (i * 977) % 60_000, seed: UInt64(i)), forKey: "r\(i % 17)")
            #expect(try cache.byteCount <= 10_000)
        }
        // One value above the limit alone is not kept: the cache is never left above it.
        try cache.set(bytes(20_000), forKey: "huge")
        #expect(try cache.data(forKey: "huge") == nil)
        #expect(try cache.byteCount <= 10_000 && cache.byteCount == entriesTotal(cache))
        // Lowering the limit trims at once.
        cache.byteLimit = 1000
        #expect(try cache.byteCount <= 1000)
    }

    /// As TMDiskCache's, `ageLimit` counts from the last use: a value read often never
    /// expires while in use; one left unread does (a read refreshes it, a `contains` does not).
    @Test func ageLimitCountsFromTheLastUse() throws {
        let root = try TemporaryRoot()
        let clock = ManualClock()
        let cache = try root.cache(clock: clock)
        cache.ageLimit = 3600
        try cache.set(bytes(100), forKey: "read")
        try cache.set(bytes(60_000), forKey: "read-file")
        try cache.set(bytes(100), forKey: "unread")
        for _ in 0..<4 {
            clock.advance(by: 2000)
            #expect(try cache.data(forKey: "read") == bytes(100), "read every 2000 s: still there")
            #expect(try cache.withFileURL(forKey: "read-file") { _ in true } == true)
        }
        #expect(try !cache.containsValue(forKey: "unread"), "8000 s unread: expired")
        #expect(try cache.data(forKey: "unread") == nil)
        // The timer's trim spares what was read (its access time may not be in the index yet).
        try cache.trimExpired()
        #expect(try cache.containsValue(forKey: "read") && cache.containsValue(forKey: "read-file"))
        #expect(try cache.entries().map(\.key).sorted() == ["read", "read-file"])
    }

    @Test func ageLimitIsARealLimit() async throws {
        let root = try TemporaryRoot()
        let clock = ManualClock()
        let cache = try root.cache(clock: clock)
        try cache.set(bytes(100), forKey: "old")
        try cache.set(bytes(60_000), forKey: "old-file")
        cache.ageLimit = 3600                       // its timer runs now (nothing is old yet), then in a minute
        clock.advance(by: 3601)
        // Never returned once older than the limit, before the timer comes round.
        #expect(try cache.data(forKey: "old") == nil)
        #expect(try !cache.containsValue(forKey: "old-file"))
        #expect(try cache.withFileURL(forKey: "old-file") { _ in true } == nil)
        try cache.set(bytes(100), forKey: "young")
        #expect(try cache.data(forKey: "young") == bytes(100))
        // The timer removes expired entries without anyone reading them (setting the limit runs it at once).
        clock.advance(by: 3601)
        cache.ageLimit = 3600
        let other = try root.cache(clock: clock)    // no age limit of its own: sees what the index holds
        #expect(try await eventually(within: 60) { try other.entryCount == 0 })
        #expect(try other.byteCount == 0)
        #expect(settledValueFileCount(cache, expected: 0) == 0)
        cache.ageLimit = 0
        try cache.set(bytes(100), forKey: "kept")
        clock.advance(by: 7200)
        #expect(try cache.data(forKey: "kept") != nil)
    }

    @Test func trimToDateRemovesEntriesNotAccessedSince() throws {
        let root = try TemporaryRoot()
        let clock = ManualClock()
        let cache = try root.cache(clock: clock)
        try cache.set(bytes(100), forKey: "a")
        try cache.set(bytes(50_000), forKey: "b")
        try cache.set(bytes(100), forKey: "c")
        clock.advance(by: 1)
        let date = clock.now
        clock.advance(by: 1)
        _ = try cache.data(forKey: "a")     // accessed after the date
        try cache.trim(toDate: date)
        #expect(try cache.entries().map(\.key) == ["a"])
        #expect(try cache.byteCount == 100)
    }

    @Test func trimToSizeRemovesLargestFirst() throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        try cache.set(bytes(100), forKey: "s")
        try cache.set(bytes(3000), forKey: "m")
        try cache.set(bytes(30_000), forKey: "l")
        try cache.set(bytes(200_000), forKey: "xl")
        try cache.trim(toSize: 5000)
        #expect(try Set(cache.entries().map(\.key)) == ["s", "m"])
        try cache.trim(toSize: 100)
        #expect(try cache.entries().map(\.key) == ["s"])
    }

    @Test func trimToSizeByDateUsesAccessTimesThatSurviveARestart() throws {
        let root = try TemporaryRoot()
        let clock = ManualClock()
        do {
            let cache = try root.cache(clock: clock)
            for key in ["a", "b", "c", "d"] { try cache.set(bytes(1000), forKey: key); clock.advance(by: 1) }
            _ = try cache.data(forKey: "a")
            clock.advance(by: 1)
            _ = try cache.data(forKey: "b")
        }
        // A new instance after the first is gone: the reads were persisted (not only kept in memory).
        let cache = try root.cache()
        let order = try cache.entries().map(\.key)
        #expect(order == ["c", "d", "a", "b"])
        try cache.trim(toSizeByDate: 2000)
        #expect(try cache.entries().map(\.key) == ["a", "b"])
        #expect(try cache.byteCount == 2000)
    }

    @Test func accessTimesReachTheIndexWithinAboutASecond() async throws {
        let root = try TemporaryRoot()
        let clock = ManualClock()
        let cache = try root.cache(clock: clock)
        try cache.set(bytes(10), forKey: "x")
        try cache.set(bytes(10), forKey: "y")
        clock.advance(by: 1)
        _ = try cache.data(forKey: "x")
        // Another process reads the index: the access shows up there without any trim or close here.
        #expect(try await eventually(within: 60) {
            return try entriesFromAnotherConnection(cache).last == "x"
        })
    }

    /// The keys by access order as the index on disk has them, read through a separate connection.
    func entriesFromAnotherConnection(_ cache: DiskCache) throws -> [String] {
        let connection = try SQLiteConnection(path: cache.cacheURL.path + "/index.sqlite")
        let statement = try connection.statement("SELECT key FROM entry ORDER BY accessed")
        var keys: [String] = []
        while try statement.step() { keys.append(statement.text(0) ?? "") }
        statement.reset()
        return keys
    }
}
