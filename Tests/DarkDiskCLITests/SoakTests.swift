import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Load run: 16 parallel readers (12 `cat` loops checking SHA-256, 4 `fio` random-read loops)
/// over a few hundred remote-only nodes, for `DARKDISK_SOAK_SECONDS` (Scripts/test --long: 600), while the
/// pool evicts all the time, other machines push new nodes, this one pulls them and imports its own.
/// Zero wrong bytes, zero failed reads, and the daemon's memory flat. Off unless the variable is set.
@Suite(.processSlots) struct SoakTests {
    static let seconds = Int(ProcessInfo.processInfo.environment["DARKDISK_SOAK_SECONDS"] ?? "") ?? 0

    @Test(.enabled(if: SoakTests.seconds > 0)) func sixteenReadersWithImportsPullsAndEvictions() async throws {
        let remote = try RemoteBucket()
        var rng = SplitMix64(seed: 0x50A4)
        var nodes: [(id: String, data: Data)] = []
        for i in 0..<240 {
            nodes.append((id: "n\(i)", data: try randomBytes(Int(16 << 10) + Int(rng.next() % (1 << 20)))))
        }
        try remote.push(many: nodes)
        let nginx = try Nginx(root: remote.bucket)
        defer { withExtendedLifetime(nginx) {} }
        try remote.join(nginx.url)
        let total = nodes.reduce(0) { $0 + $1.data.count }
        try RemoteBucket.check(try remote.darkdiskB(["config", "set", "pool.data.max_size", String(total / 5)]), "config set")
        let mount = try remote.mountB()
        let daemon = try #require(MountDaemon.pid(serving: mount.path))

        let work = remote.b.directory + "/soak"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let sums = work + "/sums"  // "ID SHA-256" of every node a reader may pick; grows as nodes are added
        try Data(nodes.map { "\($0.id) \(sha256Hex($0.data))\n" }.joined().utf8).write(to: URL(fileURLWithPath: sums))
        let errors = work + "/errors", reads = work + "/reads"
        let end = Int(Date().timeIntervalSince1970) + Self.seconds
        let cat = """
            set -o pipefail
            while [ "$(date +%s)" -lt \(end) ]; do
              line=$(shuf -n 1 \(sums)); id=${line%% *}; want=${line##* }
              got=$(timeout -s KILL 120 cat \(mount.path)/nodes/$id/data 2>> \(errors) | sha256sum) || { echo "cat $id: failed" >> \(errors); continue; }
              [ "${got%% *}" = "$want" ] || echo "cat $id: wrong bytes (${got%% *})" >> \(errors)
              echo c >> \(reads)
            done
            """
        let fio = """
            while [ "$(date +%s)" -lt \(end) ]; do
              line=$(shuf -n 1 \(sums)); id=${line%% *}
              timeout -s KILL 120 fio --name=r --filename=\(mount.path)/nodes/$id/data --rw=randread --bs=4k --ioengine=psync \\
                --runtime=2 --time_based --readonly --output=/dev/null > /dev/null 2>&1 || echo "fio $id: failed" >> \(errors)
              echo f >> \(reads)
            done
            """
        let catScript = try remote.b.file("soak-cat.sh", Data(cat.utf8))
        let fioScript = try remote.b.file("soak-fio.sh", Data(fio.utf8))
        let workers = try (0..<12).map { _ in try Background("exec bash \(catScript)", in: work) }
            + (0..<4).map { _ in try Background("exec bash \(fioScript)", in: work) }

        // Meanwhile: A pushes new nodes, B pulls them and imports its own; the daemon's RSS is sampled.
        var rss: [Int] = []
        var added = 0
        while Int(Date().timeIntervalSince1970) < end - 5 {
            try? await Task.sleep(nanoseconds: UInt64((5) * 1e9))
            let new = (id: "new\(added)", data: try randomBytes(Int(64 << 10) + Int(rng.next() % (512 << 10))))
            try remote.push(new.id, new.data)
            try RemoteBucket.check(try remote.darkdiskB(["pull"]), "pull")
            let local = (id: "local\(added)", data: try randomBytes(200_000))
            try await RemoteBucket.check(try remote.b.darkdisk(["import", "-", "--node", local.id, "--persistent", "--passphrase-file", remote.passphrase],
                                                         stdin: local.data), "import")
            let line = [new, local].map { "\($0.id) \(sha256Hex($0.data))\n" }.joined()
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: sums))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(line.utf8))
            try handle.close()
            added += 1
            if let status = try? String(contentsOfFile: "/proc/\(daemon)/status", encoding: .utf8),
               let kib = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) {
                rss.append(kib)
            }
        }
        for worker in workers { _ = await worker.wait(seconds: 180) }

        let failures = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        let readCount = ((try? String(contentsOfFile: reads, encoding: .utf8)) ?? "").split(separator: "\n")
        #expect(failures.isEmpty, "\(failures.split(separator: "\n").prefix(20).joined(separator: "\n"))\n\(mount.log.split(separator: "\n").filter { $0.contains("error") }.suffix(20).joined(separator: "\n"))")
        #expect(readCount.count > 16, "the readers ran")
        // Memory flat: the last third of the samples peaks within 32 MiB of the first third's peak.
        let third = max(1, rss.count / 3)
        let early = rss.prefix(third).max() ?? 0, late = rss.suffix(third).max() ?? 0
        #expect(late <= early + 32 * 1024, "daemon RSS grew from \(early) KiB to \(late) KiB")
        let pool = try remote.poolB()
        print("soak: \(Self.seconds) s, \(readCount.filter { $0 == "c" }.count) whole-file cat reads checked, "
              + "\(readCount.filter { $0 == "f" }.count) fio runs, \(added) pushes+pulls and \(added) imports, "
              + "daemon RSS \(rss.min() ?? 0)–\(rss.max() ?? 0) KiB (first third peak \(early), last third peak \(late)), "
              + "pool cached \(pool["cachedSize"] ?? "?") of max \(pool["maxSize"] ?? "?")")
    }
}
