// A second process for DiskCache: the tests run it next to themselves (concurrent writers, a `kill -9` in the
// middle of sets, a check after a crash) and `Scripts/bench diskcache` measures the cache with it in-process.
//
//   darkdisk-cache-tool writer ROOT NAME KEYS [ITERATIONS]   set self-checking values in a loop ("ready" after the first)
//   darkdisk-cache-tool hammer ROOT NAME ITERATIONS SEED     random sets, gets, removes and trims; fails on a wrong value
//   darkdisk-cache-tool verify ROOT NAME                     every value checks out and byteCount adds up
//   darkdisk-cache-tool bench ROOT KEYS [1k,1m]              set and get ops/s, 1 KiB and 1 MiB values
//   darkdisk-cache-tool fill ROOT NAME COUNT                 COUNT entries of 1 KiB
//   darkdisk-cache-tool startup ROOT NAME                    seconds to open, read byteCount and get one key
import DarkDiskCache
import DarkDiskTestSupport
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("darkdisk-cache-tool: \(message)\n".utf8))
    exit(1)
}

/// One line on standard output, written at once (the tests wait for "ready").
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let mode = arguments.first else { fail("usage: darkdisk-cache-tool writer|hammer|verify|bench|fill|startup ...") }

do {
    switch (mode, arguments.count) {
    case ("writer", 4), ("writer", 5):
        let cache = try DiskCache(name: arguments[2], rootPath: arguments[1])
        guard let keys = Int(arguments[3]), keys > 0 else { fail("KEYS must be a positive number") }
        let iterations = arguments.count == 5 ? Int(arguments[4]) ?? 0 : Int.max
        var generation = Int(getpid()) * 1_000_000
        for i in 0..<iterations {
            let key = "k\(i % keys)"
            try cache.set(CacheValuePattern.value(key: key, generation: generation), forKey: key)
            generation += 1
            if i == 0 { say("ready") }
        }
        say("done")

    case ("hammer", 5):
        let cache = try DiskCache(name: arguments[2], rootPath: arguments[1])
        guard let iterations = Int(arguments[3]), let seed = UInt64(arguments[4]) else { fail("bad ITERATIONS or SEED") }
        var rng = seed | 1
        func next(_ bound: Int) -> Int {
            rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17
            return Int(rng % UInt64(bound))
        }
        var generation = Int(seed % 1000) * 1_000_000
        for _ in 0..<iterations {
            let key = "k\(next(40))"
            switch next(20) {
            case 0..<8:
                generation += 1
                try cache.set(CacheValuePattern.value(key: key, generation: generation), forKey: key)
            case 8..<17:
                if let data = try cache.data(forKey: key), !CacheValuePattern.check(data, key: key) {
                    fail("wrong value for \(key) (\(data.count) bytes)")
                }
            case 17, 18:
                try cache.removeValue(forKey: key)
            default:
                try cache.trim(toSizeByDate: 2_000_000)
            }
        }
        say("ok")

    case ("verify", 3):
        let cache = try DiskCache(name: arguments[2], rootPath: arguments[1])
        let entries = try cache.entries()
        for entry in entries {
            guard let data = try cache.data(forKey: entry.key) else { continue }
            if !CacheValuePattern.check(data, key: entry.key) { fail("wrong value for \(entry.key)") }
        }
        let after = try cache.entries()
        let sum = after.reduce(0) { $0 + $1.byteCount }
        let total = try cache.byteCount
        if sum != total { fail("byteCount \(total) but the entries add up to \(sum)") }
        say("ok \(after.count) entries, \(total) bytes")

    case ("bench", 3), ("bench", 4):
        guard let keys = Int(arguments[2]), keys > 0 else { fail("KEYS must be a positive number") }
        let only = arguments.count == 4 ? Set(arguments[3].split(separator: ",").map(String.init)) : ["1k", "1m"]
        for (label, size) in [("1k", 1024), ("1m", 1 << 20)] where only.contains(label) {
            let cache = try DiskCache(name: "bench-\(label)", rootPath: arguments[1])
            var value = Data(count: size)
            value.withUnsafeMutableBytes { for i in 0..<$0.count { $0[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 13) } }
            let set = try seconds { for i in 0..<keys { try cache.set(value, forKey: "key-\(i)") } }
            sync()    // the writes reach the disk before the gets are timed (as in bench-diskcache.py)
            var order = Array(0..<keys)
            var rng = SystemRandomNumberGenerator()
            order.shuffle(using: &rng)
            var found = 0
            let get = try seconds {
                for i in order { if let data = try cache.data(forKey: "key-\(i)"), data.count == size { found += 1 } }
            }
            if found != keys { fail("get found \(found) of \(keys) values") }
            say("set_\(label) \(Int(Double(keys) / set))")
            say("get_\(label) \(Int(Double(keys) / get))")
            try cache.removeAll()
        }

    case ("fill", 4):
        let cache = try DiskCache(name: arguments[2], rootPath: arguments[1])
        guard let count = Int(arguments[3]) else { fail("bad COUNT") }
        let value = Data(repeating: 0x5A, count: 1024)
        for i in 0..<count { try cache.set(value, forKey: "key-\(i)") }
        say("filled \(try cache.entryCount)")

    case ("startup", 3):
        var answer = 0
        let elapsed = try seconds {
            let cache = try DiskCache(name: arguments[2], rootPath: arguments[1])
            answer = try cache.byteCount
            guard try cache.data(forKey: "key-0") != nil else { fail("key-0 is missing") }
        }
        if answer == 0 { fail("an empty cache") }
        say(String(format: "%.4f", elapsed))

    default:
        fail("unknown mode or wrong arguments: \(arguments.joined(separator: " "))")
    }
} catch {
    fail("\(error)")
}
