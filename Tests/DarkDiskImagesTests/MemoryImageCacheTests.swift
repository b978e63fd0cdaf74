@testable import DarkDiskImages
import Foundation
import Testing

/// The strict cost-based LRU under the image manager.
@Suite struct MemoryImageCacheTests {
    func image(_ bytes: Int) -> MemoryImageCache.Entry {
        MemoryImageCache.Entry(image: ProcessedImage(data: Data(count: bytes), format: .png, width: 1, height: 1))
    }

    func key(_ name: String, _ processor: String = "") -> ImageCacheKey { ImageCacheKey(ownerID: name, processorID: processor) }

    @Test func evictsTheLeastRecentlyUsedFirstByCost() {
        let cache = MemoryImageCache(totalCostLimit: 1000, maximumEntryFraction: 1)
        #expect(cache.totalCostLimit == 1000 && cache.countLimit == 0)
        cache.insert(image(300), for: key("a"))
        cache.insert(image(300), for: key("b"))
        cache.insert(image(300), for: key("c"))
        #expect(cache.totalCost == 900 && cache.count == 3)
        #expect(cache.entry(for: key("a")) != nil, "a hit makes 'a' the most recent")
        cache.insert(image(300), for: key("d"))
        #expect(cache.keys == [key("d"), key("a"), key("c")], "'b' was the least recently used: \(cache.keys)")
        #expect(cache.totalCost == 900)
        // One large entry pushes out as many old ones as it needs, oldest first.
        cache.insert(image(650), for: key("e"))
        #expect(cache.keys == [key("e"), key("d")] && cache.totalCost == 950)
        // Replacing an entry replaces its cost.
        cache.insert(image(100), for: key("d"))
        #expect(cache.keys == [key("d"), key("e")] && cache.totalCost == 750)
        // Lowering the limit evicts at once.
        cache.totalCostLimit = 200
        #expect(cache.keys == [key("d")] && cache.totalCost == 100)
    }

    @Test func countLimitAndOversizedEntries() {
        let cache = MemoryImageCache(totalCostLimit: 1000, countLimit: 2)
        #expect(cache.maximumEntryFraction == 0.25)
        cache.insert(image(10), for: key("a"))
        cache.insert(image(10), for: key("b"))
        cache.insert(image(10), for: key("c"))
        #expect(cache.keys == [key("c"), key("b")])
        #expect(!cache.insert(image(251), for: key("big")), "more than a quarter of the limit is not cached")
        #expect(!cache.contains(key("big")) && cache.count == 2)
        #expect(cache.insert(image(250), for: key("fits")))
        // An oversized replacement drops the old entry rather than keep a stale one.
        #expect(!cache.insert(image(900), for: key("fits")))
        #expect(!cache.contains(key("fits")))
        cache.countLimit = 1
        #expect(cache.count == 1)
        cache.removeAll()
        #expect(cache.count == 0 && cache.totalCost == 0 && cache.keys.isEmpty)
        // Slots are reused after removals; the list stays consistent.
        for i in 0..<50 { cache.insert(image(1), for: key("k\(i)")) }
        #expect(cache.keys == [key("k49")])
    }

    @Test func negativeEntriesExpireAndFlushesMatchKeys() async throws {
        let (clock, advance) = ExpiryClock.manual()
        let cache = MemoryImageCache(clock: clock)
        cache.insert(MemoryImageCache.Entry(image: nil, expires: clock.now() + .seconds(1)), for: key("none"))
        cache.insert(image(10), for: key("n1", "resize-64x64"))
        cache.insert(image(10), for: key("n1", "crop-32x32"))
        cache.insert(image(10), for: key("n2", "resize-64x64"))
        #expect(cache.contains(key("none")))
        let negative = try #require(cache.entry(for: key("none")))
        #expect(negative.image == nil)
        #expect(cache.totalCost == 30 + MemoryImageCache.negativeEntryCost)
        advance(.milliseconds(999))
        #expect(cache.contains(key("none")), "not yet expired")
        advance(.milliseconds(1))
        #expect(cache.entry(for: key("none")) == nil, "expired: looked up again")
        #expect(cache.count == 3)
        #expect(cache.removeAll { $0.processorID == "resize-64x64" } == 2)
        #expect(cache.keys == [key("n1", "crop-32x32")])
    }
}
