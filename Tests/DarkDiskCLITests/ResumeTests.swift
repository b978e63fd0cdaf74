import DarkDiskStore
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// `kill -9` of a `darkdisk fetch` of a 64 MiB node in the middle of the transfer: the next fetch completes,
/// moves only the missing bytes (plus at most one part), and gives back the pushed bytes. The bytes are
/// counted at our fault proxy (`Tests/Tools/fault-proxy.py`), in front of a real nginx serving the bucket.
@Suite(.processSlots) struct ResumeTests {
    /// The CLI's part size (DownloadManager's default).
    static let partSize = 8 << 20

    @Test func aKilledFetchResumesWithOnlyTheMissingBytes() async throws {
        let a = try CLIStore()
        let b = try CLIStore()
        let bucket = a.directory + "/bucket"
        try FileManager.default.createDirectory(atPath: bucket, withIntermediateDirectories: true)
        let passphrase = try a.file("pass", Data("resume me\n".utf8))
        let data = try #require(FileHandle(forReadingAtPath: "/dev/urandom")?.readData(ofLength: 64 << 20))
        await #expect(try a.darkdisk(["init", "--remote", "file://" + bucket, "--passphrase-file", passphrase, "--scrypt-log-n", "10"]).status == 0)
        let push = try await a.darkdisk(["push", try a.file("big", data), "--node", "big", "--passphrase-file", passphrase])
        #expect(push.status == 0, "\(push.stderr)")
        let object = try RemoteBucket.cloudObject(in: bucket, named: a.objectName("big", passphrase: passphrase))
        let size = try #require((try FileManager.default.attributesOfItem(atPath: bucket + object))[.size] as? NSNumber).intValue

        // Store B reads the bucket over http, through the proxy (which starts its own nginx on the bucket).
        let proxy = try FaultProxy(servingRoot: bucket)
        let joined = try await b.darkdisk(["init", "--remote", proxy.url, "--passphrase-file", passphrase, "--scrypt-log-n", "10"])
        #expect(joined.status == 0, "\(joined.stderr)")
        await #expect(try b.darkdisk(["pull", "--passphrase-file", passphrase]).status == 0)
        // Room for the node in B's cache pool (25 MiB by default), so that it stays once fetched.
        await #expect(try b.darkdisk(["config", "set", "pool.data.max_size", "256M", "--passphrase-file", passphrase]).status == 0)

        // First fetch, throttled to 24 MiB/s and held by the proxy once 21/32 of the object went out: past the
        // middle and not on a boundary of the parts in flight (4 × 8 MiB), so a fetch that only records whole
        // parts loses more than one part. It is killed, connections open, once it has recorded what it received.
        // (Killing it while bytes flow made the figure depend on the machine's load: bytes the proxy had sent
        // sat in socket buffers of a starved client, and CI once saw 24 MiB of them.)
        let killAt = size / 32 * 21
        try proxy.control(["reset_stats": true, "throttle": 24 << 20, "hold": killAt])
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "DARKDISK_STORE")
        environment.removeValue(forKey: "DARKDISK_PASSPHRASE_FILE")
        let errors = b.directory + "/fetch-1.err"
        let pid = try Shell.spawn(Shell.darkdisk, ["fetch", "--node", "big", "--store", b.storePath, "--passphrase-file", passphrase],
                                  environment: environment, stderr: errors)
        let deadline = Date().addingTimeInterval(120)
        var exited: Int32?
        var recorded = 0
        // A checkpoint every MiB received (DownloadManager's default): once the proxy holds, all but the last
        // MiB is in the index, which `darkdisk status` reads.
        while Date() < deadline {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { exited = status; break }
            if try proxy.stats().bytes >= killAt {
                recorded = try await b.darkdisk(["status", "--json", "--passphrase-file", passphrase]).partialDownloadBytes()
                if recorded > killAt - (1 << 20) { break }
            }
            try? await Task.sleep(nanoseconds: UInt64((0.05) * 1e9))
        }
        if let exited {
            Issue.record("the first fetch ended by itself (wait status \(exited)): \((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "")")
            return
        }
        kill(pid, SIGKILL)
        await #expect(Shell.wait(pid) == 128 + SIGKILL)
        try? await Task.sleep(nanoseconds: UInt64((0.3) * 1e9))  // the proxy notices the closed connections
        let first = try proxy.bytes(object)
        #expect(recorded > killAt - (1 << 20), "the fetch recorded \(recorded) of the \(killAt) bytes sent, after up to 120 s")
        #expect(first > killAt - (256 << 10) && first <= killAt, "held in the middle: \(first) of \(size) bytes sent")
        try proxy.control(["hold": NSNull()])

        // Second fetch, full speed: completes, and moves at most the missing bytes plus one part.
        try proxy.control(["reset_stats": true, "throttle": 0])
        let resumed = try await b.darkdisk(["fetch", "--node", "big", "--passphrase-file", passphrase])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let second = try proxy.bytes(object)
        let mib = { (n: Int) in String(format: "%.1f MiB", Double(n) / 1_048_576) }
        #expect(second <= size - first + Self.partSize,
                "the resumed fetch moved \(mib(second)); missing were \(mib(size - first)), plus one part \(mib(Self.partSize)) allowed")
        #expect(second > 0, "the first fetch had not finished")

        let out = b.directory + "/exported"
        let export = try await b.darkdisk(["export", "--node", "big", "-o", out, "--passphrase-file", passphrase])
        #expect(export.status == 0, "\(export.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == data, "the resumed download decrypts to the pushed bytes")

        // A third fetch finds the node local and transfers nothing.
        try proxy.control(["reset_stats": true])
        await #expect(try b.darkdisk(["fetch", "--node", "big", "--passphrase-file", passphrase]).status == 0)
        let third = try proxy.stats().paths[object]
        #expect((third?.gets ?? 0) == 0 && (third?.bytes ?? 0) == 0, "a fetch of a local node went to the server: \(String(describing: third))")
    }
}
