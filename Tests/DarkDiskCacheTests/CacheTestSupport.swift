@testable import DarkDiskCache
import DarkDiskTestSupport
import Foundation

/// A cache root in a fresh temporary folder (on disk, not tmpfs), removed when the test ends.
final class TemporaryRoot {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "darkdisk-cache-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func cache(_ name: String = "test") throws -> DiskCache { try DiskCache(name: name, rootPath: path) }
}

/// Deterministic bytes: `count` of them from `seed` (the suites' shared generator).
func bytes(_ count: Int, seed: UInt64 = 1) -> Data {
    Data(SplitMix64.bytes(count, seed: seed))
}

/// The same self-checking values as darkdisk-cache-tool writes ("KEY#GEN#" then bytes from both).
enum Pattern {
    static func size(_ generation: Int) -> Int {
        generation % 3 == 0 ? 40_000 + (generation * 7919) % 160_000 : 100 + (generation * 131) % 5000
    }

    static func value(key: String, generation: Int) -> Data {
        var data = Data("\(key)#\(generation)#".utf8)
        let seed = UInt8(truncatingIfNeeded: key.utf8.reduce(0) { $0 &+ Int($1) })
        data.append(contentsOf: (0..<size(generation)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ generation) ^ seed })
        return data
    }

    static func check(_ data: Data, key: String) -> Bool {
        let prefix = Data("\(key)#".utf8)
        guard data.starts(with: prefix) else { return false }
        let rest = data.dropFirst(prefix.count)
        guard let hash = rest.firstIndex(of: UInt8(ascii: "#")),
              let generation = Int(String(decoding: rest[rest.startIndex..<hash], as: UTF8.self)) else { return false }
        return data == value(key: key, generation: generation)
    }
}

/// Polls `condition` until it holds or `seconds` pass.
func eventually(within seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    return try condition()
}

/// The sum of the entries' sizes, which byteCount must equal.
func entriesTotal(_ cache: DiskCache) throws -> Int {
    try cache.entries().reduce(0) { $0 + $1.byteCount }
}

/// The built darkdisk-cache-tool: next to the test bundle (what `swift build --build-tests` builds).
enum Tool {
    static let path: String = {
        if let path = ProcessInfo.processInfo.environment["DARKDISK_CACHE_TOOL"], !path.isEmpty { return path }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("darkdisk-cache-tool").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/darkdisk-cache-tool").path
    }()

    /// Starts the tool with its output in `output`; returns its pid.
    static func spawn(_ arguments: [String], output: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, output + ".err", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
        guard rc == 0 else { throw DiskCacheError(.io, "cannot start \(path): \(String(cString: strerror(rc)))") }
        return pid
    }

    /// Waits for `pid`; its exit status (or 128 + signal).
    static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        if status & 0x7F == 0 { return (status >> 8) & 0xFF }
        return 128 + (status & 0x7F)
    }

    /// Runs the tool to its end: status and standard output + error.
    static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let output = NSTemporaryDirectory() + "darkdisk-cache-tool-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: output); try? FileManager.default.removeItem(atPath: output + ".err") }
        let status = wait(try spawn(arguments, output: output))
        let out = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? ""
        return (status, out + err)
    }
}

/// The number of value files in the cache's folder, once it is `expected` or 5 s have passed: a discarded
/// file the background sweep was checking at that moment goes a moment later.
func settledValueFileCount(_ cache: DiskCache, expected: Int) -> Int {
    let files = cache.cacheURL.path + "/files"
    let count = { (try? FileManager.default.contentsOfDirectory(atPath: files).count) ?? -1 }
    let deadline = Date().addingTimeInterval(5)
    while count() != expected, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
    return count()
}
