@testable import DarkDiskCache
import DarkDiskTestSupport
import Foundation
import DarkDiskSync
import Testing

/// Will/did hooks, on one documented queue, in order.
@Suite struct DiskCacheHookTests {
    @Test func hooksRunInOrderOnTheHookQueue() throws {
        let root = try TemporaryRoot()
        let queue = DispatchQueue(label: "test.hooks")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 7)
        let cache = try DiskCache(name: "hooks", rootPath: root.path, hookQueue: queue)
        #expect(cache.hookQueue === queue)
        let events = Locked<[String]>([])
        let offQueue = Locked(0)
        @Sendable func record(_ event: String) {
            if DispatchQueue.getSpecific(key: key) != 7 { offQueue.withLock { $0 += 1 } }
            events.withLock { $0.append(event) }
        }
        cache.willAddObject = { _, key in record("willAdd \(key)") }
        cache.didAddObject = { _, key in record("didAdd \(key)") }
        cache.willRemoveObject = { _, key in record("willRemove \(key)") }
        cache.didRemoveObject = { _, key in record("didRemove \(key)") }
        cache.willRemoveAllObjects = { _ in record("willRemoveAll") }
        cache.didRemoveAllObjects = { _ in record("didRemoveAll") }

        try cache.set(bytes(10), forKey: "a")
        try cache.set(bytes(50_000), forKey: "b")
        try cache.removeValue(forKey: "a")
        try cache.removeValue(forKey: "never-set")
        try cache.trim(toSize: 0)
        try cache.set(bytes(10), forKey: "c")
        try cache.removeAll()
        cache.byteLimit = 100
        try cache.set(bytes(60), forKey: "d")
        try cache.set(bytes(60), forKey: "e")      // evicts d
        queue.sync {}
        #expect(events.withLock { $0 } == [
            "willAdd a", "didAdd a", "willAdd b", "didAdd b", "willRemove a", "didRemove a",
            "willRemove b", "didRemove b", "willAdd c", "didAdd c", "willRemoveAll", "didRemoveAll",
            "willAdd d", "didAdd d", "willAdd e", "willRemove d", "didAdd e", "didRemove d",
        ])
        #expect(offQueue.withLock { $0 } == 0)
    }

    @Test func aHookMayCallTheCache() async throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        let seen = Locked<Data?>(nil)
        cache.didAddObject = { cache, key in
            guard key == "k" else { return }
            seen.withLock { $0 = try? cache.data(forKey: key) }
            try? cache.set(Data([1]), forKey: "from-hook-\(key)")
        }
        try cache.set(bytes(100), forKey: "k")
        cache.hookQueue.sync {}
        #expect(seen.withLock { $0 } == bytes(100))
        #expect(try await eventually(within: 60) { try cache.data(forKey: "from-hook-k") == Data([1]) })
        cache.didAddObject = nil
    }
}
