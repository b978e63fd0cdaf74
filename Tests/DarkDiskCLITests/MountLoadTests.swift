import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// 8 parallel readers over 200 remote-only nodes whose total is about 4× the data pool, so that the pool
/// evicts all the time, downloads are joined and files are evicted while others are being read.
@Suite(.processSlots) struct MountLoadTests {
    static let nodeCount = 200
    static let readers = 8

    @Test func parallelReadersOverAnEvictingPool() async throws {
        let remote = try RemoteBucket()
        var rng = Xorshift(seed: 0x5EED)
        var nodes: [(id: String, data: Data)] = []
        for i in 0..<Self.nodeCount {
            nodes.append((id: "n\(i)", data: try randomBytes(Int.random(in: (64 << 10)...(512 << 10), using: &rng))))
        }
        try remote.push(many: nodes)
        let total = nodes.reduce(0) { $0 + $1.data.count }
        let cloudTotal = try nodes.reduce(0) { $0 + (try remote.cloudSize($1.id)) }
        let nginx = try Nginx(root: remote.bucket)
        defer { withExtendedLifetime(nginx) {} }
        try remote.join(nginx.url)
        let maxSize = total / 4
        try RemoteBucket.check(try remote.darkdiskB(["config", "set", "pool.data.max_size", String(maxSize)]), "config set")
        let mount = try remote.mountB()

        // Each reader reads every node and compares its SHA-256, in its own order: four walk the list from
        // different starting points (so two readers often want the same node at once), four in random orders.
        // dd's iflag=nocache drops the node's pages from the kernel's page cache after each read, so that the
        // next reader of the node goes to the daemon again (and finds it evicted, or not).
        let work = remote.b.directory + "/load"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let lines = nodes.map { "\(sha256Hex($0.data)) \(mount.path)/nodes/\($0.id)/data\n" }
        let reader = """
            failed=0
            while read -r sum path; do
              got=$(timeout -s KILL 60 dd if="$path" bs=128K iflag=nocache status=none | sha256sum)
              if [ "${got%% *}" != "$sum" ]; then echo "$path: read bytes with SHA-256 ${got%% *}"; failed=1; fi
            done
            exit $failed
            """
        let readerScript = try remote.b.file("reader.sh", Data(reader.utf8))
        var script = ""
        for reader in 0..<Self.readers {
            let start = reader * Self.nodeCount / (Self.readers / 2) % lines.count
            var order = Array(lines[start...] + lines[..<start])
            if reader >= Self.readers / 2 { order.shuffle(using: &rng) }
            try Data(order.joined().utf8).write(to: URL(fileURLWithPath: "\(work)/list-\(reader)"))
            script += "(timeout -s KILL 300 bash \(readerScript) < \(work)/list-\(reader) > \(work)/out-\(reader) 2>&1; echo $? > \(work)/rc-\(reader)) &\n"
        }
        script += "wait\n"
        let started = Date()
        let run = try await Shell.run("/bin/bash", ["-c", script])
        let seconds = Date().timeIntervalSince(started)
        #expect(run.status == 0)
        for reader in 0..<Self.readers {
            let rc = (try? String(contentsOfFile: "\(work)/rc-\(reader)", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            let out = (try? String(contentsOfFile: "\(work)/out-\(reader)", encoding: .utf8)) ?? ""
            let failures = out.split(separator: "\n")
            #expect(rc == "0" && failures.isEmpty,
                    "reader \(reader) (exit \(rc ?? "?")): \(failures.count) lines of failures, first: \(failures.prefix(4).joined(separator: " | "))")
        }

        // Once the readers closed their files, the pool is at or under its max.
        var pool: [String: Any] = [:]
        let settled = await eventually(within: 15) {
            pool = (try? remote.poolB()) ?? [:]
            return ((pool["cachedSize"] as? Int) ?? .max) <= maxSize
        }
        #expect(settled, "pool after the readers: \(pool) (max \(maxSize))")
        #expect(((pool["maxSize"] as? Int) ?? 0) == maxSize, "\(pool)")

        // The run really evicted: more than the bucket went over the wire (nginx's access log: body bytes).
        var sent = 0
        for line in nginx.accessLog.split(separator: "\n") where line.contains(".ddc ") {
            let fields = line.split(separator: "\"")
            if fields.count > 2, let bytes = fields[2].split(separator: " ").dropFirst().first.flatMap({ Int($0) }) { sent += bytes }
        }
        #expect(sent > cloudTotal, "the readers were served \(sent) bytes of cloud files for a bucket of \(cloudTotal): nothing was evicted and read again")
        print("MountLoadTests: \(Self.readers) readers × \(Self.nodeCount) nodes (\(total >> 20) MiB, pool \(maxSize >> 20) MiB) in \(String(format: "%.1f", seconds)) s, \(sent >> 20) MiB downloaded")
    }
}

/// A small seeded generator, so a failing run can be repeated with the same node sizes and orders.
struct Xorshift: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }
    mutating func next() -> UInt64 {
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        return state
    }
}
