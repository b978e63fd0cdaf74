@testable import DarkDiskCache
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// Many tasks and several processes on one cache, and `kill -9` in the middle of sets.
@Suite(.processSlots) struct DiskCacheConcurrencyTests {
    /// After concurrent work: every value is one that was written for its key, and byteCount adds up.
    func checkConsistent(_ cache: DiskCache) throws {
        for entry in try cache.entries() {
            if let data = try cache.data(forKey: entry.key) {
                #expect(CacheValuePattern.check(data, key: entry.key), "\(entry.key) holds a value written for it")
            }
        }
        #expect(try cache.byteCount == entriesTotal(cache))
        #expect(try cache.entryCount == cache.entries().count)
    }

    @Test func manyTasksSetGetRemoveAndTrimAtOnce() async throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        let second = try root.cache()        // another instance with the same name joins in
        cache.byteLimit = 3_000_000
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<16 {
                group.addTask {
                    let target = task % 2 == 0 ? cache : second
                    for i in 0..<60 {
                        let key = "k\((task * 7 + i * 3) % 25)"
                        switch (task + i) % 6 {
                        case 0, 1, 2:
                            try await target.async.set(CacheValuePattern.value(key: key, generation: task * 1000 + i), forKey: key)
                        case 3:
                            if let data = try await target.async.data(forKey: key) {
                                #expect(CacheValuePattern.check(data, key: key))
                            }
                        case 4:
                            if i % 12 == 4 { try await target.async.trim(toSizeByDate: 1_000_000) } else { try await target.async.removeValue(forKey: key) }
                        default:
                            let ok = try await target.async.withFileURL(forKey: key) { url in CacheValuePattern.check(try Data(contentsOf: url), key: key) }
                            #expect(ok != false)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        try checkConsistent(cache)
        #expect(try cache.byteCount <= 3_000_000)
    }

    @Test func twoProcessesAndThisOneShareACache() throws {
        let root = try TemporaryRoot()
        let cache = try root.cache()
        let out = root.path + "/hammer"
        let pids = try [1, 2].map { try Tool.spawn(["hammer", root.path, "test", "400", "\($0 * 7919)"], output: out + "\($0)") }
        // This process works on the same keys meanwhile.
        for i in 0..<300 {
            let key = "k\(i % 40)"
            if i % 3 == 0 {
                try cache.set(CacheValuePattern.value(key: key, generation: 900_000_000 + i), forKey: key)
            } else if let data = try cache.data(forKey: key) {
                #expect(CacheValuePattern.check(data, key: key))
            }
            if i % 50 == 0 { try cache.trim(toSizeByDate: 2_000_000) }
        }
        for (n, pid) in pids.enumerated() {
            let status = Tool.wait(pid)
            let output = ((try? String(contentsOfFile: out + "\(n + 1)", encoding: .utf8)) ?? "")
                + ((try? String(contentsOfFile: out + "\(n + 1).err", encoding: .utf8)) ?? "")
            #expect(status == 0, "hammer \(n + 1): \(output)")
            #expect(output.contains("ok"))
        }
        try checkConsistent(cache)
        let verify = try Tool.run(["verify", root.path, "test"])
        #expect(verify.status == 0, "\(verify.output)")
    }

    @Test func killDashNineDuringSetsLeavesOldOrNewValues() async throws {
        let root = try TemporaryRoot()
        let out = root.path + "/writer"
        for round in 0..<12 {
            let pid = try Tool.spawn(["writer", root.path, "test", "30"], output: out)
            // Wait for the first set, then kill at a different moment each round.
            _ = await eventually(within: 60) { ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").contains("ready") }
            usleep(UInt32(20_000 + (round * 37_000) % 200_000))
            kill(pid, SIGKILL)
            #expect(Tool.wait(pid) == 128 + SIGKILL, "round \(round): killed mid-run")
            let verify = try Tool.run(["verify", root.path, "test"])
            #expect(verify.status == 0, "round \(round): \(verify.output)")
        }
        let cache = try root.cache()
        try checkConsistent(cache)
        #expect(try cache.entryCount > 0)
        // What the kills left in tmp/ and files/ goes with the sweep; every value stays readable.
        let tmp = cache.cacheURL.path + "/tmp"
        for name in try FileManager.default.contentsOfDirectory(atPath: tmp) {
            var old = [timeval(tv_sec: time(nil) - 3600, tv_usec: 0), timeval(tv_sec: time(nil) - 3600, tv_usec: 0)]
            utimes(tmp + "/" + name, &old)
        }
        cache.folder.sweep()
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp).isEmpty)
        let files = try FileManager.default.contentsOfDirectory(atPath: cache.cacheURL.path + "/files")
        let fileEntries = try cache.entries().filter { $0.length > CacheFolder.inlineLimit }
        #expect(files.count == fileEntries.count, "no orphan value file left")
        try checkConsistent(cache)
    }
}
