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

    func cache(_ name: String = "test", clock: any StoreClock = SystemClock()) throws -> DiskCache {
        try DiskCache(name: name, rootPath: path, clock: clock)
    }
}

/// Deterministic bytes: `count` of them from `seed` (the suites' shared generator).
func bytes(_ count: Int, seed: UInt64 = 1) -> Data {
    Data(SplitMix64.bytes(count, seed: seed))
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

    /// Starts the tool with its output in `output` (and its errors in `output.err`); returns its pid.
    static func spawn(_ arguments: [String], output: String) throws -> pid_t {
        try ChildProcess.spawn(path, arguments, stdout: output, stderr: output + ".err")
    }

    /// Waits for `pid`; its exit status (or 128 + signal).
    static func wait(_ pid: pid_t) -> Int32 { ChildProcess.wait(pid) }

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
