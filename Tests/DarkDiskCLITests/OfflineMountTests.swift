import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// Offline use through a real mount of a store whose remote (a folder) goes away and
/// comes back: the mount starts without it, local files read and write, reads of remote-only files fail
/// at once with one log line per outage, changes and pins wait, and all of it catches up when it returns.
@Suite(.processSlots) struct OfflineMountTests {
    /// "At once": a third of the 30 s a read waits for a remote thought up (alone, the read fails in
    /// milliseconds; beside the suite's `stress-ng` and `dbench` on two cores, one `cat` of the three took
    /// 7.4 s, the next 3.6 s); under a sanitizer (a daemon several times slower) half that wait.
    static let atOnce: Double = TestTiming.isSanitized ? 15 : 10

    @Test func theDriveWorksWithoutTheRemoteAndCatchesUpWhenItReturns() async throws {
        let setup = try RemoteBucket()
        let far = CLIStore.bytes(200_000, seed: 30)
        try setup.push("far", far)
        try setup.join("file://" + setup.bucket)
        let away = setup.bucket + ".away"
        try FileManager.default.moveItem(atPath: setup.bucket, toPath: away)

        // The remote is gone before the mount starts: it mounts anyway and soon knows it is offline.
        let mount = try setup.mountB(["--poll-interval", "1"])
        #expect(await eventually(within: 20) { (try? Shell.xattr("user.darkdisk.remote", mount.path))?.hasPrefix("offline since ") == true },
                "remote: \(String(describing: try? Shell.xattr("user.darkdisk.remote", mount.path)))\n\(mount.log)")
        let status = try setup.darkdiskB(["status"])
        #expect(status.output.contains("remote state offline since "), "\(status.output)")

        // A remote-only file fails at once, every time, with one log line for the outage.
        for _ in 0..<3 {
            let started = Date()
            let cat = try await Shell.sh("cat \(Shell.quote(mount.path + "/nodes/far/data")) > /dev/null")
            let seconds = Date().timeIntervalSince(started)
            #expect(cat.status != 0 && cat.stderr.contains("Input/output error"), "\(cat.stderr)")
            #expect(seconds < Self.atOnce, "the read failed after \(seconds) s")
        }
        #expect(mount.log.components(separatedBy: "the remote is unreachable").count - 1 == 1, "\(mount.log)")

        // Local files read and write; the change and a pin wait for the remote.
        let note = mount.path + "/files/note.txt"
        try Data("written offline".utf8).write(to: URL(fileURLWithPath: note))
        #expect(FileManager.default.contents(atPath: note) == Data("written offline".utf8))
        let pin = try setup.darkdiskB(["pin", "--node", "far"])
        #expect(pin.status == 0, "\(pin.stderr)")
        try await Task.sleep(nanoseconds: 1_500_000_000)
        #expect(try Shell.xattr("user.darkdisk.sync", note) != "synced")
        #expect(try Shell.xattr("user.darkdisk.local", mount.path + "/nodes/far/data") == "none")

        // Back: online again, the queue drains, the pin completes.
        try FileManager.default.moveItem(atPath: away, toPath: setup.bucket)
        #expect(await eventually(within: 30) { (try? Shell.xattr("user.darkdisk.remote", mount.path)) == "online" }, "\(mount.log)")
        #expect(await eventually(within: 30) { (try? Shell.xattr("user.darkdisk.sync", note)) == "synced" }, "\(mount.log)")
        #expect(await eventually(within: 30) { (try? Shell.xattr("user.darkdisk.local", mount.path + "/nodes/far/data")) == "full" }, "\(mount.log)")
        #expect(FileManager.default.contents(atPath: mount.path + "/nodes/far/data") == far)
        #expect(mount.log.contains("the remote answers again"), "\(mount.log)")
    }

    /// The same with an HTTP server (nginx behind our proxy) stopped and started again on its port: reads of
    /// remote-only files fail at once while it is down, and a pin made meanwhile completes when it is back.
    @Test func aStoppedServerFailsReadsAtOnceAndItsReturnResumesPins() async throws {
        let remote = try RemoteBucket()
        let data = CLIStore.bytes(400_000, seed: 31)
        try remote.push("far", data)
        var proxy: FaultProxy? = try FaultProxy(servingRoot: remote.bucket)
        let port = try #require(proxy?.port)
        try remote.join(try #require(proxy?.url))
        let mount = try remote.mountB(["--poll-interval", "1"])
        #expect(try Shell.xattr("user.darkdisk.remote", mount.path) == "online")
        proxy = nil  // the server stops
        #expect(await eventually(within: 20) { (try? Shell.xattr("user.darkdisk.remote", mount.path))?.hasPrefix("offline since ") == true },
                "\(mount.log)")
        let started = Date()
        let cat = try await Shell.sh("cat \(Shell.quote(mount.path + "/nodes/far/data")) > /dev/null")
        #expect(cat.status != 0 && Date().timeIntervalSince(started) < Self.atOnce, "\(cat.stderr), after \(Date().timeIntervalSince(started)) s")
        #expect(try remote.darkdiskB(["pin", "--node", "far"]).status == 0)
        proxy = try FaultProxy(servingRoot: remote.bucket, port: port)  // and starts again
        defer { withExtendedLifetime(proxy) {} }
        #expect(await eventually(within: 30) { (try? Shell.xattr("user.darkdisk.local", mount.path + "/nodes/far/data")) == "full" }, "\(mount.log)")
        #expect(try Shell.xattr("user.darkdisk.remote", mount.path) == "online")
        #expect(FileManager.default.contents(atPath: mount.path + "/nodes/far/data") == data)
    }
}
