@testable import DarkDiskCache
import DarkDiskTestSupport
import Foundation
import DarkDiskSync
import Testing

/// File URLs scoped to a closure, removeAll through the trash, damaged entries, the background sweep.
@Suite struct DiskCacheFileTests {
    @Test func fileURLStaysValidWhileTheClosureRuns() throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        let other = try root.cache()
        try cache.set(bytes(100_000), forKey: "big")
        let result = try cache.withFileURL(forKey: "big") { url -> Bool in
            // Removed and replaced by another instance meanwhile: the file stays where it is, unchanged.
            try other.set(bytes(90_000, seed: 2), forKey: "big")
            try other.removeValue(forKey: "big")
            return try Data(contentsOf: url) == bytes(100_000)
        }
        #expect(result == true)
        #expect(try cache.data(forKey: "big") == nil)
        // Released: the next sweep deletes the file the closure kept.
        cache.folder.sweep()
        #expect(settledValueFileCount(cache, expected: 0) == 0)
        #expect(try cache.withFileURL(forKey: "missing") { _ in 1 } == nil)
    }

    @Test func fileURLOfASmallValueMovesItIntoAFile() throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        try cache.set(bytes(500), forKey: "small")
        let before = try cache.byteCount
        let path = try cache.withFileURL(forKey: "small") { url throws -> String in
            #expect(try Data(contentsOf: url) == bytes(500))
            return url.path
        }
        #expect(path.map { FileManager.default.fileExists(atPath: $0) } == true)
        #expect(try cache.data(forKey: "small") == bytes(500))
        #expect(try cache.byteCount == entriesTotal(cache) && cache.byteCount >= before)
    }

    @Test func removeAllGoesThroughTheTrashAndEmptiesIt() async throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        for i in 0..<50 { try cache.set(bytes(i % 2 == 0 ? 40_000 : 300, seed: UInt64(i)), forKey: "k\(i)") }
        try cache.removeAll()
        #expect(try cache.entryCount == 0 && cache.byteCount == 0)
        #expect(try cache.data(forKey: "k0") == nil)
        #expect(settledValueFileCount(cache, expected: 0) == 0)
        let trash = cache.cacheURL.path + "/trash"
        #expect(try await eventually(within: 60) { try FileManager.default.contentsOfDirectory(atPath: trash).isEmpty })
        try cache.set(bytes(50_000), forKey: "after")
        #expect(try cache.data(forKey: "after") == bytes(50_000))
    }

    @Test func removeAllWaitsForAFileURLClosure() async throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        try await cache.async.set(bytes(60_000), forKey: "k")
        let removing = Task.detached { try await cache.async.removeAll() }
        let intact = try await cache.async.withFileURL(forKey: "k") { url -> Bool in
            try await Task.sleep(for: .milliseconds(300))
            return try Data(contentsOf: url) == bytes(60_000)
        }
        try await removing.value
        #expect(intact == nil || intact == true)
        #expect(try await cache.async.entries().isEmpty)
    }

    @Test func aDamagedValueFileIsAMissAndIsRemoved() throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        try cache.set(bytes(100_000), forKey: "flipped")
        try cache.set(bytes(100_000, seed: 2), forKey: "truncated")
        try cache.set(bytes(100_000, seed: 3), forKey: "deleted")
        try cache.set(bytes(100_000, seed: 4), forKey: "grown")
        try cache.set(bytes(100_000, seed: 5), forKey: "intact")
        func path(_ key: String) throws -> String { try #require(cache.withFileURL(forKey: key) { $0.path }) }
        let flipped = try path("flipped")
        var data = try Data(contentsOf: URL(fileURLWithPath: flipped))
        data[12_345] ^= 0x01
        try data.write(to: URL(fileURLWithPath: flipped))
        #expect(truncate(try path("truncated"), 50_000) == 0)
        #expect(unlink(try path("deleted")) == 0)
        let grown = FileHandle(forWritingAtPath: try path("grown"))!
        grown.seekToEndOfFile(); grown.write(Data([1, 2, 3])); grown.closeFile()

        let removed = Locked<[String]>([])
        cache.didRemoveObject = { _, key in removed.withLock { $0.append(key) } }
        for key in ["flipped", "truncated", "deleted", "grown"] {
            #expect(try cache.data(forKey: key) == nil, "\(key) is a miss")
            #expect(try !cache.containsValue(forKey: key), "\(key) is removed")
        }
        #expect(try cache.data(forKey: "intact") == bytes(100_000, seed: 5))
        #expect(try cache.entryCount == 1 && cache.byteCount == entriesTotal(cache))
        cache.hookQueue.sync {}
        #expect(removed.withLock { Set($0) } == ["flipped", "truncated", "deleted", "grown"])
    }

    @Test func aDamagedIndexStartsAnEmptyCache() throws {
        let root = try TemporaryRoot()
        var folder = ""
        do {
            let cache = try root.cache()
            try cache.set(bytes(100), forKey: "k")
            try cache.set(bytes(100_000), forKey: "f")
            folder = cache.cacheURL.path
        }
        for suffix in ["-wal", "-shm"] { unlink(folder + "/index.sqlite" + suffix) }
        try Data(repeating: 0x42, count: 8192).write(to: URL(fileURLWithPath: folder + "/index.sqlite"))
        let cache = try root.cache()
        #expect(try cache.data(forKey: "k") == nil)
        #expect(try cache.entryCount == 0 && cache.byteCount == 0)
        try cache.set(bytes(100), forKey: "k")
        #expect(try cache.data(forKey: "k") == bytes(100))
    }

    @Test func sweepRemovesLeftoversOfCrashesOnly() throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        try cache.set(bytes(50_000), forKey: "live")
        let folder = cache.cacheURL.path
        // What a crash leaves: a temporary file, and a value file whose row was never committed.
        let staleTmp = folder + "/tmp/stale", freshTmp = folder + "/tmp/fresh", orphan = folder + "/files/orphan.0123"
        for path in [staleTmp, freshTmp, orphan] { try bytes(100).write(to: URL(fileURLWithPath: path)) }
        var old = [timeval(tv_sec: time(nil) - 3600, tv_usec: 0), timeval(tv_sec: time(nil) - 3600, tv_usec: 0)]
        utimes(staleTmp, &old)
        cache.folder.sweep()
        #expect(!FileManager.default.fileExists(atPath: staleTmp))
        #expect(FileManager.default.fileExists(atPath: freshTmp), "a young temporary file may be a write in progress")
        #expect(!FileManager.default.fileExists(atPath: orphan))
        #expect(try cache.data(forKey: "live") == bytes(50_000))
    }
}
