import DarkDiskTestSupport
import DarkDiskStore
import DarkDiskTestTraits
import Foundation
import Testing

/// The kernel keeps names and attributes for a minute (`FuseFileSystem.cacheTimeout`) and listings carry
/// them (readdirplus), so `ls -l`, `find` and `du` ask the daemon once per folder, not once per entry. What
/// another process changes must still be seen within seconds: the daemon's store watcher tells the kernel
/// exactly which names and attributes to drop.
@Suite(.processSlots) struct KernelCacheTests {
    @Test func aChangeInAnotherProcessIsSeenAtOnceThoughTheKernelCachesForAMinute() async throws {
        let store = try CLIStore()
        for (node, text) in [("a", "one"), ("b", "two two"), ("c", "three three three")] {
            await #expect(try store.darkdisk(["import", "-", "--node", node], stdin: Data(text.utf8)).status == 0)
        }
        let mount = try Mount(store)
        let nodes = Shell.quote(mount.path + "/nodes")
        // The listing carries every entry's attributes: sizes, counts and types are right without a lookup.
        await #expect(try Shell.sh("ls \(nodes)").output == "a\nb\nc\n")
        await #expect(try Shell.sh("cd \(nodes) && stat -c '%n %s' */data").output == "a/data 3\nb/data 7\nc/data 17\n")
        await #expect(try Shell.sh("find \(nodes) -type f | sort").output == ["a", "b", "c"].map { mount.path + "/nodes/\($0)/data\n" }.joined())
        await #expect(try Shell.sh("ls -l \(nodes)/b | tail -n +2 | awk '{ print $5, $9 }'").output == "7 data\n")

        // Each cached name and size now changes in another process: a re-import with another size, a delete,
        // a new node. Each is seen well within the minute the kernel would otherwise keep the old answer.
        await #expect(try store.darkdisk(["import", "-", "--node", "a"], stdin: Data("a longer first node".utf8)).status == 0)
        await #expect(try store.darkdisk(["delete", "--node", "b"]).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--node", "d"], stdin: Data("four".utf8)).status == 0)
        await #expect(eventually(within: 10) { (try? Shell.sh("stat -c %s \(nodes)/a/data").output) == "19\n" }, "the new size")
        await #expect(eventually(within: 10) { (try? Shell.sh("cat \(nodes)/a/data").output) == "a longer first node" }, "the new bytes")
        await #expect(eventually(within: 10) { (try? Shell.sh("stat \(nodes)/b").status) != 0 }, "the deleted node is gone")
        await #expect(eventually(within: 10) { (try? Shell.sh("ls \(nodes)").output) == "a\nc\nd\n" }, "listed as it is now")
        await #expect(try Shell.sh("du -b -s \(nodes)/c/data | cut -f1").output == "17\n")
    }

    /// A drive file open in a process when a pulled change lands: the kernel's pages of the old version are
    /// dropped by the kernel itself (the daemon drops only the attributes, never pages: see `StoreWatcher`),
    /// so the same descriptor reads the new version at its next read, as a new `cat` does.
    @Test func aDescriptorOpenOnADriveFileReadsAPulledChangeAtItsNextRead() async throws {
        let remote = try RemoteBucket()
        let first = Data(repeating: UInt8(ascii: "a"), count: 100_000), second = Data(repeating: UInt8(ascii: "b"), count: 100_001)
        try remote.push("doc", first, name: "doc.txt")
        try remote.join("file://" + remote.bucket)
        let mount = try remote.mountB()
        let path = mount.path + "/files/doc.txt"
        let flag = remote.b.directory + "/pulled"
        // Reads the whole file, waits for the flag, reads it again from the start through the same descriptor.
        let reader = try Background("""
            exec python3 -c '
            import os, sys, time
            fd = os.open(sys.argv[1], os.O_RDONLY)
            print(os.pread(fd, 200000, 0)[:1].decode(), len(os.pread(fd, 200000, 0)), flush=True)
            while not os.path.exists(sys.argv[2]): time.sleep(0.05)
            data = os.pread(fd, 200000, 0)
            print(data[:1].decode(), len(data), data.count(b"b"), flush=True)
            ' \(Shell.quote(path)) \(Shell.quote(flag))
            """, in: remote.b.directory)
        #expect(await eventually(within: 30) { ((try? String(contentsOfFile: reader.out, encoding: .utf8)) ?? "").contains("a 100000") },
                "the first version read: \((try? String(contentsOfFile: reader.err, encoding: .utf8)) ?? "")")
        try remote.push("doc", second, name: "doc.txt")
        try RemoteBucket.check(try remote.darkdiskB(["pull"]), "pull")
        #expect(await eventually(within: 30) { mount.log.contains("the store changed") }, "the daemon saw the change")
        try Data().write(to: URL(fileURLWithPath: flag))
        #expect(await reader.wait(seconds: 60) == 0, "\((try? String(contentsOfFile: reader.err, encoding: .utf8)) ?? "")")
        let lines = ((try? String(contentsOfFile: reader.out, encoding: .utf8)) ?? "").split(separator: "\n")
        #expect(lines.last == "b 100001 100001", "the open descriptor read the new version whole: \(lines)")
        await #expect(try Shell.sh("cat \(Shell.quote(path))").stdout == second)
    }
}
