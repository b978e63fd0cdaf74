import DarkDiskTestSupport
import DarkDiskFS
import DarkDiskTestTraits
import Foundation
import Testing

/// The mount as a good Linux file system under stress: open handles hold retain tokens, only
/// the mounting user enters without allow_other, a killed daemon leaves a store the next mount serves,
/// and a lazy unmount lets open files finish before the daemon exits.
@Suite(.processSlots) struct MountSafetyTests {
    enum Shrink: String, CaseIterable, Sendable {
        case setfattr  // the mount root's attribute
        case config  // `darkdisk config set` from another process
    }

    @Test(arguments: Shrink.allCases)
    func anOpenFileKeepsReadingWhenThePoolShrinksToZero(shrink: Shrink) async throws {
        let remote = try RemoteBucket()
        let data = try randomBytes(20 << 20)
        try remote.push("held", data)
        let nginx = try Nginx(root: remote.bucket)
        defer { withExtendedLifetime(nginx) {} }
        try remote.join(nginx.url)
        try RemoteBucket.check(try remote.darkdiskB(["config", "set", "pool.data.max_size", "256M"]), "config set")
        let mount = try remote.mountB()
        let file = mount.path + "/nodes/held/data"
        let work = remote.b.directory
        let shrinkCommand = switch shrink {
        case .setfattr: "setfattr -n user.darkdisk.pool.data.max_size -v 0 \(Shell.quote(mount.path))"
        case .config: "\(Shell.quote(Shell.darkdisk)) config set pool.data.max_size 0 --store \(Shell.quote(remote.b.storePath)) --passphrase-file \(Shell.quote(remote.passphrase))"
        }
        // Open, read 1 MiB, shrink the pool to 0, read the rest from the same descriptor, close.
        let script = """
            exec 3< \(Shell.quote(file)) || exit 10
            dd bs=64K count=16 iflag=fullblock status=none <&3 > \(Shell.quote(work + "/part1")) || exit 11
            \(shrinkCommand) || exit 12
            cat <&3 > \(Shell.quote(work + "/part2")) || exit 13
            exec 3<&-
            """
        let run = try await Shell.run("/usr/bin/timeout", ["-s", "KILL", "120", "/bin/bash", "-c", script])
        #expect(run.status == 0, "exit \(run.status): \(run.stderr) LOG: \(mount.log)")
        let read = ((try? Data(contentsOf: URL(fileURLWithPath: work + "/part1"))) ?? Data())
            + ((try? Data(contentsOf: URL(fileURLWithPath: work + "/part2"))) ?? Data())
        #expect(read.count == data.count && read == data, "the open file read \(read.count) of \(data.count) bytes, equal: \(read == data)")
        #expect(try remote.darkdiskB(["config", "get", "pool.data.max_size"]).output == "0\n")

        // Closed: the file is evicted.
        var pool: [String: Any] = [:]
        await #expect(eventually(within: 10) {
            pool = (try? remote.poolB()) ?? [:]
            return (pool["cachedSize"] as? Int) == 0
        }, "after close: \(pool)")
        // The transfer winds down after the last byte was read (authentication, then the store refuses a file
        // larger than the whole pool): until then the node still shows its partial download.
        await #expect(eventually(within: 10) { (try? Shell.xattr("user.darkdisk.local", file)) == "none" },
                "local: \((try? Shell.xattr("user.darkdisk.local", file)) ?? "?") LOG: \(mount.log)")

        // With the pool at 0 a whole read still works (its handle holds the download) and leaves nothing.
        #expect(try Shell.sha256(of: file) == sha256Hex(data), "LOG: \(mount.log)")
        await #expect(eventually(within: 10) {
            pool = (try? remote.poolB()) ?? [:]
            return (pool["cachedSize"] as? Int) == 0
        }, "after a read with the pool at 0: \(pool)")
    }

    @Test func otherUsersGetPermissionDeniedWithoutAllowOther() async throws {
        let store = try CLIStore()
        // The mount point's parents are open to nobody: only the mount itself may refuse.
        #expect(chmod(store.directory, 0o755) == 0)
        let contents = Data("for everyone\n".utf8)
        try await RemoteBucket.check(try store.darkdisk(["import", "-", "--node", "n", "--persistent"], stdin: contents), "import")
        let asNobody = { (command: String) throws -> Run in
            try Shell.run("/usr/bin/timeout", ["-s", "KILL", "30", "/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                               "/bin/sh", "-c", command])
        }
        let mountpoint = store.directory + "/mnt"
        #expect(try asNobody("ls -d \(Shell.quote(store.directory))").status == 0, "nobody reaches the folder of the mount point")

        do {
            let mount = try Mount(store)
            let ls = try asNobody("ls \(Shell.quote(mount.path))")
            #expect(ls.status != 0 && ls.stderr.contains("Permission denied"), "ls as nobody: \(ls.status) \(ls.output) \(ls.stderr)")
            let cat = try asNobody("cat \(Shell.quote(mount.path + "/nodes/n/data"))")
            #expect(cat.status != 0 && cat.stderr.contains("Permission denied"), "cat as nobody: \(cat.status) \(cat.stderr)")
            #expect(try Shell.sh("ls \(Shell.quote(mount.path))", timeout: 30).output == "avatars\nfiles\nnodes\nthumbs\n", "the mounting user enters")
            await #expect(try store.darkdisk(["unmount", mount.path]).status == 0)
        }
        #expect(!Mount.isMounted(mountpoint))

        // With allow_other others enter, and the modes decide: the ID views are the owner's only there (a
        // flat view by ID cannot show the search rights of the drive's folders).
        let shared = try Mount(store, options: ["-o", "allow_other"])
        let ls = try asNobody("ls \(Shell.quote(shared.path))")
        #expect(ls.status == 0 && ls.output == "avatars\nfiles\nnodes\nthumbs\n", "ls as nobody with allow_other: \(ls.output) \(ls.stderr)")
        let cat = try asNobody("cat \(Shell.quote(shared.path + "/nodes/n/data"))")
        #expect(cat.status != 0 && cat.stderr.contains("Permission denied"), "cat of /nodes as nobody with allow_other: \(cat.stderr)")
        #expect(try Shell.sh("cat \(Shell.quote(shared.path + "/nodes/n/data"))", timeout: 30).stdout == contents, "the owner reads it")
    }

    /// A read waiting on a stalled server holds a page lock; a `pull` that changed the node
    /// made the daemon invalidate that inode, which waited for the same lock. A `kill -9` of the daemon then
    /// left a zombie with a thread stuck in the kernel, the reader hung unkillably and neither `darkdisk
    /// unmount` nor `fusermount3 -u` worked (only an abort through /sys/fs/fuse/connections did). Now a
    /// changed node loses its names and attributes, never its pages, and a killed daemon frees its readers
    /// at once: through the ID view, and through the drive, whose inode serves every version of its node.
    @Test(arguments: ["/nodes/slow/data", "/files/slow.bin"])
    func aChangeWhileAReadWaitsOnAStalledServerNeverLeavesAnUnkillableReader(path: String) async throws {
        let remote = try RemoteBucket()
        try remote.push("slow", CLIStore.bytes(3_000_000, seed: 41), name: "slow.bin")
        let proxy = try FaultProxy(servingRoot: remote.bucket)
        defer { withExtendedLifetime(proxy) {} }
        try remote.join(proxy.url)
        let mount = try remote.mountB(["--remote-timeout", "120"])
        let mountpoint = mount.path
        let daemon = try #require(MountDaemon.pid(serving: mountpoint))
        defer { Self.abortIfStuck(mountpoint) }

        // Every answer for the node stalls after its first 64 KiB: the read waits, holding its page.
        try proxy.control(["reset_stats": true, "stall": ["after": 65536, "seconds": 300, "count": 1000, "path": "/nodes/\(try remote.objectName("slow"))/"]])
        let reader = try Background("exec cat \(Shell.quote(mountpoint + path)) > /dev/null", in: remote.b.directory)
        await #expect(eventually(within: 30) { ((try? proxy.stats().stalls) ?? 0) > 0 }, "the read reached the stall: \(reader.stderr)")
        // The node changes in the remote and B pulls: the daemon notices (it looks every second).
        try remote.push("slow", CLIStore.bytes(3_000_001, seed: 42), name: "slow.bin")
        try RemoteBucket.check(try remote.darkdiskB(["pull"]), "pull")
        #expect(await eventually(within: 30) { mount.log.contains("the store changed") },
                "the daemon saw the change: \(mount.log.suffix(1500))")
        // (What it then tells the kernel, it tells within a moment.)
        try await Task.sleep(for: .seconds(2))

        #expect(kill(daemon, SIGKILL) == 0)
        // An unkillable reader cannot be waited for: look at its state, and abort the connection if it hangs.
        let freed = await eventually(within: 20) { !MountDaemon.isAlive(reader.pid) }
        #expect(freed, "the reader of a killed mount returns (it hung in the kernel)")
        if !freed { Self.abortIfStuck(mountpoint) }
        let status = await reader.wait(seconds: 20)
        #expect(status != nil && status != 0, "the reader of a killed mount returns with an error (exit \(String(describing: status)))")
        await #expect(eventually(within: 20) { Self.threadsOf(daemon) <= 1 }, "the daemon is gone (at most its zombie leader left), no thread of it stuck in the kernel")
        if Mount.isMounted(mountpoint) {
            let unmount = try Shell.sh("fusermount3 -u \(Shell.quote(mountpoint))", timeout: 30)
            #expect(unmount.status == 0, "fusermount3 -u of the dead mount: \(unmount.stderr)")
        }
        #expect(!Mount.isMounted(mountpoint))
        try proxy.control(["clear": true])
    }

    /// How many threads of process `pid` are left (a zombie whose thread is stuck in the kernel keeps one).
    static func threadsOf(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"))?.count ?? 0
    }

    /// Frees a mount whose daemon could not die (the failure the test above guards against), so a failing
    /// run does not leave a hung mount behind.
    static func abortIfStuck(_ mountpoint: String) {
        if (try? FileManager.default.contentsOfDirectory(atPath: "/sys/fs/fuse/connections"))?.isEmpty ?? true {
            _ = try? Shell.run("/bin/mount", ["-t", "fusectl", "none", "/sys/fs/fuse/connections"])
        }
        guard let device = MountTable.top(at: mountpoint)?.device.split(separator: ":").last else { return }
        try? "1".write(toFile: "/sys/fs/fuse/connections/\(device)/abort", atomically: false, encoding: .utf8)
        _ = try? Shell.run("/bin/fusermount3", ["-u", "-z", mountpoint])
    }

    @Test func killNineMidReadLeavesAStoreTheNextMountServes() async throws {
        let remote = try RemoteBucket()
        let big = try randomBytes(48 << 20)
        let small = CLIStore.bytes(300_000, seed: 31)
        let medium = CLIStore.bytes(3_000_000, seed: 32)
        try remote.push("big", big)
        try remote.push("small", small)
        try remote.push("medium", medium)
        let proxy = try FaultProxy(servingRoot: remote.bucket)
        defer { withExtendedLifetime(proxy) {} }
        try remote.join(proxy.url)
        try RemoteBucket.check(try remote.darkdiskB(["config", "set", "pool.data.max_size", "256M"]), "config set")
        let here = CLIStore.bytes(1_500_000, seed: 33)
        try await RemoteBucket.check(try remote.b.darkdisk(["import", "-", "--node", "here", "--persistent", "--passphrase-file", remote.passphrase],
                                                     stdin: here), "import")
        let expected = ["big": big, "small": small, "medium": medium, "here": here]

        let first = try remote.mountB()
        let mountpoint = first.path
        #expect(try Shell.sha256(of: mountpoint + "/nodes/small/data") == sha256Hex(small), "a node made local before the crash")
        let daemon = try #require(MountDaemon.pid(serving: mountpoint), "the mount daemon of \(mountpoint) in /proc")

        // cat of the big node; the proxy holds it once 12 MiB went out (connections open) and the daemon is
        // killed. (Killed while bytes flowed at 16 MiB/s, a loaded machine once let the whole 48 MiB through
        // first: cat then rightly exited 0.)
        try proxy.control(["reset_stats": true, "throttle": 8 << 20, "hold": 12 << 20])
        let reader = try Background("exec timeout -s KILL 120 cat \(Shell.quote(mountpoint + "/nodes/big/data")) > /dev/null",
                                    in: remote.b.directory)
        let midway = await eventually(within: 60) { ((try? proxy.stats().bytes) ?? 0) >= 12 << 20 }
        #expect(midway, "the read did not start downloading: \(reader.stderr)")
        #expect(kill(daemon, SIGKILL) == 0)
        let status = await reader.wait(seconds: 30)
        #expect(status != nil && status != 0, "the reader of a killed mount fails (exit \(String(describing: status)))")
        await #expect(eventually(within: 10) { !MountDaemon.isAlive(daemon) })
        try proxy.control(["throttle": 0, "hold": NSNull()])

        // The dead mount unmounts with fusermount3 -u (unless it already went away by itself).
        if Mount.isMounted(mountpoint) {
            let unmount = try Shell.sh("fusermount3 -u \(Shell.quote(mountpoint))", timeout: 30)
            #expect(unmount.status == 0, "fusermount3 -u of the dead mount: \(unmount.stderr)")
        }
        #expect(!Mount.isMounted(mountpoint))
        #expect(try remote.darkdiskB(["status"]).status == 0, "the store opens after the crash")

        // A new mount serves every node, the half-downloaded one included.
        let second = try remote.mountB()
        #expect(second.path == mountpoint)
        for (id, data) in expected.sorted(by: { $0.key < $1.key }) {
            #expect(try Shell.sha256(of: second.path + "/nodes/\(id)/data") == sha256Hex(data), "node \(id) after the crash")
        }
        withExtendedLifetime(first) {}
    }

    /// With `-o auto_unmount` libfuse keeps `fusermount3` running to unmount when the daemon dies. It used to
    /// inherit the daemon's ready pipe, so `darkdisk mount` waited for it forever instead of returning.
    @Test func autoUnmountMountReturnsAndReads() async throws {
        let store = try CLIStore()
        let data = CLIStore.bytes(200_000, seed: 43)
        try await RemoteBucket.check(try store.darkdisk(["import", "-", "--node", "n", "--persistent"], stdin: data), "import")
        let path = store.directory + "/mnt"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        defer { if Mount.isMounted(path) { _ = try? Shell.run("/bin/fusermount3", ["-u", "-z", path]) } }
        let mount = try await Shell.run("/usr/bin/timeout", ["-s", "KILL", "60", Shell.darkdisk, "mount", path, "-o", "auto_unmount", "--store", store.storePath])
        #expect(mount.status == 0, "darkdisk mount -o auto_unmount returns: exit \(mount.status) \(mount.stderr)")
        try #require(Mount.isMounted(path))
        #expect(try Shell.sha256(of: path + "/nodes/n/data") == sha256Hex(data))
        // (What fusermount3 does once the daemon dies is libfuse's; in a full parallel run it sometimes took
        // longer than any bound worth waiting for, so it is not asserted here.)
        let unmount = try await store.darkdisk(["unmount", path])
        #expect(unmount.status == 0, "\(unmount.stderr)")
        await #expect(eventually(within: 10) { !Mount.isMounted(path) })
    }

    /// A backgrounded daemon holds nothing its caller had open (daemon(7)): a script that pipes through
    /// `darkdisk mount`, with a descriptor of its own open, still sees its pipe end. And it may open as many
    /// descriptors as the hard limit allows, whatever soft limit its caller had.
    @Test func theDaemonHoldsNoneOfItsCallersDescriptorsAndMayOpenAsManyAsAllowed() async throws {
        let store = try CLIStore()
        let path = store.directory + "/mnt"
        let marker = store.directory + "/callers-file"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        defer { if Mount.isMounted(path) { _ = try? Shell.run("/bin/fusermount3", ["-u", "-z", path]) } }
        // fd 7 on a file, fd 8 the write end of the pipe `cat` reads: `cat` ends only if no process holds it.
        let script = """
            ulimit -Sn 512
            exec 7> \(Shell.quote(marker))
            { \(Shell.quote(Shell.darkdisk)) mount \(Shell.quote(path)) --store \(Shell.quote(store.storePath)) 8>&1 >/dev/null; echo "mount exit $?"; } | cat
            """
        let run = try await Shell.run("/usr/bin/timeout", ["-s", "KILL", "60", "/bin/bash", "-c", script])
        #expect(run.status == 0 && run.output.contains("mount exit 0"), "the pipe ended: exit \(run.status) \(run.output) \(run.stderr)")
        try #require(Mount.isMounted(path))
        let daemon = try #require(MountDaemon.pid(serving: path), "the mount daemon of \(path) in /proc")
        let held = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon)/fd")
            .compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(daemon)/fd/\($0)") }
        #expect(!held.contains(marker), "the daemon holds its caller's file: \(held)")
        #expect(held.filter { $0.hasPrefix("pipe:") }.isEmpty, "the daemon holds a pipe: \(held)")
        let limits = try String(contentsOfFile: "/proc/\(daemon)/limits", encoding: .utf8)
        let files = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }, "\(limits)")
        let values = files.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).prefix(2)
        #expect(values.count == 2 && values.first == values.last && values.first != "512", "soft limit raised to the hard one: \(files)")
        let unmount = try await store.darkdisk(["unmount", path])
        #expect(unmount.status == 0, "\(unmount.stderr)")
    }

    @Test func lazyUnmountWhileAFileIsOpenThenTheDaemonExitsAfterTheLastClose() async throws {
        let store = try CLIStore()
        let data = CLIStore.bytes(6_000_000, seed: 41)
        try await RemoteBucket.check(try store.darkdisk(["import", "-", "--node", "n", "--persistent"], stdin: data), "import")
        let mount = try Mount(store)
        let daemon = try #require(MountDaemon.pid(serving: mount.path), "the mount daemon of \(mount.path) in /proc")
        let work = store.directory
        let script = """
            exec 3< \(Shell.quote(mount.path + "/nodes/n/data")) || exit 10
            dd bs=64K count=16 iflag=fullblock status=none <&3 > \(Shell.quote(work + "/part1")) || exit 11
            touch \(Shell.quote(work + "/ready"))
            while [ ! -e \(Shell.quote(work + "/go")) ]; do sleep 0.05; done
            cat <&3 > \(Shell.quote(work + "/part2")) || exit 12
            exec 3<&-
            """
        let reader = try Background(script, in: work)
        await #expect(eventually(within: 30) { FileManager.default.fileExists(atPath: work + "/ready") }, "\(reader.stderr)")

        let unmount = try await store.darkdisk(["unmount", mount.path])
        #expect(unmount.status == 0, "darkdisk unmount with a file open: \(unmount.stderr)")
        #expect(!Mount.isMounted(mount.path), "the mount is detached at once")
        #expect(MountDaemon.isAlive(daemon), "the daemon serves the open file until it is closed")

        #expect(FileManager.default.createFile(atPath: work + "/go", contents: nil))
        #expect(await reader.wait(seconds: 60) == 0, "the open reader finishes: \(reader.stderr)")
        let read = ((try? Data(contentsOf: URL(fileURLWithPath: work + "/part1"))) ?? Data())
            + ((try? Data(contentsOf: URL(fileURLWithPath: work + "/part2"))) ?? Data())
        #expect(read == data, "the open file read \(read.count) of \(data.count) bytes after the unmount")
        await #expect(eventually(within: 15) { !MountDaemon.isAlive(daemon) }, "the daemon exits after the last close")
        await #expect(try store.darkdisk(["export", "--node", "n"]).stdout == data, "the store is consistent")
    }
}
