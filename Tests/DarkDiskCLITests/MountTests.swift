import DarkDiskTestSupport
import DarkDiskStore
import DarkDiskCrypto
import DarkDiskSystem
import DarkDiskTestTraits
import Foundation
import Testing

@Suite(.processSlots) struct MountTests {
    @Test func catCpAndDdReadThePlaintext() async throws {
        let store = try CLIStore()
        let files: [(String, Data)] = [("empty", Data()), ("one", Data([0x2A])), ("big", CLIStore.bytes(5_300_001, seed: 5))]
        for (id, data) in files {
            let input = try store.file(id + ".in", data)
            await #expect(try store.darkdisk(["import", input, "--node", id, "--persistent"]).status == 0)
        }
        let mount = try Mount(store)

        let listing = try await Shell.sh("ls \(Shell.quote(mount.path))/nodes")
        #expect(listing.output.split(separator: "\n") == ["big", "empty", "one"])
        await #expect(try Shell.sh("ls \(Shell.quote(mount.path))/nodes/big").output == "data\n")
        for (id, data) in files {
            let dataPath = mount.path + "/nodes/\(id)/data"
            let attributes = try FileManager.default.attributesOfItem(atPath: dataPath)
            #expect((attributes[.size] as? Int) == data.count, "ls -l shows the plaintext size of \(id)")
            let original = store.directory + "/\(id).in"
            let cat = try await Shell.sh("cat \(Shell.quote(dataPath)) | sha256sum; sha256sum < \(Shell.quote(original))")
            let sums = cat.output.split(separator: "\n")
            #expect(sums.count == 2 && sums[0] == sums[1], "cat of \(id): \(cat.output) \(cat.stderr)")
            let copy = store.directory + "/\(id).copy"
            await #expect(try Shell.sh("cp \(Shell.quote(dataPath)) \(Shell.quote(copy))").status == 0)
            #expect(try Data(contentsOf: URL(fileURLWithPath: copy)) == data)
        }

        let big = files[2].1
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<12 {
            let skip = Int.random(in: 0..<big.count, using: &rng)
            let count = Int.random(in: 1...200_000, using: &rng)
            let bs = [1, 7, 512, 4096, 65536, 1 << 20].randomElement(using: &rng)!
            let run = try await Shell.sh("dd if=\(Shell.quote(mount.path + "/nodes/big/data")) bs=\(bs) iflag=skip_bytes,count_bytes skip=\(skip) count=\(count) status=none")
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == big.subdata(in: skip..<min(big.count, skip + count)), "dd skip=\(skip) count=\(count) bs=\(bs)")
        }
    }

    /// `-o max_read=N` is one of the advertised mount options; libfuse ends a session whose `init` does
    /// not repeat it, which used to leave a mount that vanished right after `darkdisk mount` succeeded.
    @Test func maxReadOptionKeepsTheMountAndCapsRequests() async throws {
        let store = try CLIStore()
        let data = CLIStore.bytes(700_001, seed: 9)
        await #expect(try store.darkdisk(["import", try store.file("m.in", data), "--node", "m", "--persistent"]).status == 0)
        let mount = try Mount(store, options: ["-o", "max_read=16384"])
        let cat = try await Shell.sh("cat \(Shell.quote(mount.path + "/nodes/m/data"))")
        #expect(cat.status == 0 && cat.stdout == data, "cat through a max_read=16384 mount: \(cat.stderr)")
        let options = try await Shell.sh("awk -v m=\(Shell.quote(mount.path)) '$2 == m { print $4 }' /proc/mounts").output
        #expect(options.contains("max_read=16384"), "the kernel got the option: \(options)")
        #expect(Mount.isMounted(mount.path), "still mounted after reading")
    }

    /// A re-import by another process while mounted: the next `cat` reads the new content whole, even right
    /// after a `stat` cached the old size (it used to stop at the old size for a second, silently). A node
    /// deleted while a file of it is open reads to the end through that file (`delete --help`).
    @Test func aReimportReadsWholeAndADeletedOpenFileReadsToTheEnd() async throws {
        let store = try CLIStore()
        let small = CLIStore.bytes(4097, seed: 21), large = CLIStore.bytes(65537, seed: 22), other = CLIStore.bytes(300_000, seed: 23)
        await #expect(try store.darkdisk(["import", try store.file("s", small), "--node", "r", "--persistent"]).status == 0)
        await #expect(try store.darkdisk(["import", try store.file("o", other), "--node", "d", "--persistent"]).status == 0)
        let mount = try Mount(store)
        let file = mount.path + "/nodes/r/data"
        for (content, name) in [(large, "l"), (small, "s2")] {
            await #expect(try Shell.sh("stat -c %s \(Shell.quote(file))").status == 0)
            await #expect(try store.darkdisk(["import", try store.file(name, content), "--node", "r", "--persistent"]).status == 0)
            await #expect(try Shell.sh("cat \(Shell.quote(file))").stdout == content, "cat right after a re-import of \(content.count) bytes")
            await #expect(try Shell.sh("stat -c %s \(Shell.quote(file))").output == "\(content.count)\n")
        }

        let script = """
        import os, subprocess, sys, time
        fd = os.open(sys.argv[1], os.O_RDONLY)
        subprocess.run(sys.argv[2:], check=True, stdout=subprocess.DEVNULL)
        time.sleep(1.5)  # past the kernel's attribute timeout: it asks the daemon again
        size = os.fstat(fd).st_size
        data = os.pread(fd, size + 1, 0)
        sys.stdout.buffer.write(str(size).encode() + b"\\n" + data)
        """
        let run = try await Shell.run("/usr/bin/python3", ["-c", script, mount.path + "/nodes/d/data", Shell.darkdisk, "delete", "--node", "d", "--store", store.storePath])
        #expect(run.status == 0, "reading a deleted open file: \(run.stderr)")
        #expect(run.stdout == Data("\(other.count)\n".utf8) + other)
        await #expect(eventually(within: 10) { (try? Shell.sh("ls \(Shell.quote(mount.path + "/nodes"))").output) == "r\n" }, "the node is gone after the close")

        // Opening for reading with O_TRUNC asks to truncate: refused like any write, the data intact.
        let trunc = try await Shell.run("/usr/bin/python3", ["-c", "import os, sys; os.open(sys.argv[1], os.O_RDONLY | os.O_TRUNC)", file])
        #expect(trunc.status != 0 && trunc.stderr.contains("Read-only file system"), "O_RDONLY|O_TRUNC: \(trunc.status) \(trunc.stderr)")
        await #expect(try Shell.sh("cat \(Shell.quote(file))").stdout == small)
    }

    /// The daemon (root here) raises its own mount's readahead window to 4 MiB, also on a mount point whose
    /// name /proc/self/mountinfo escapes (it used to miss those and leave 128 KiB).
    @Test func readaheadIsRaisedOnAMountPointWithASpace() async throws {
        let store = try CLIStore()
        let path = store.directory + "/mount point"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        defer { if Mount.isMounted(path) { _ = try? Shell.run("/bin/fusermount3", ["-u", "-z", path]) } }
        let mount = try await store.darkdisk(["mount", path])
        #expect(mount.status == 0, "\(mount.stderr)")
        let escaped = path.replacingOccurrences(of: " ", with: "\\040")
        let mountinfo = String(decoding: try SystemCall.readWhole("/proc/self/mountinfo"), as: UTF8.self)
        var device = ""
        for line in mountinfo.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count > 4, fields[4] == escaped { device = String(fields[2]) }
        }
        #expect(!device.isEmpty, "the mount in mountinfo")
        let window = try String(contentsOfFile: "/sys/class/bdi/\(device)/read_ahead_kb", encoding: .utf8)
        #expect(window == "4096\n")
        await #expect(try store.darkdisk(["unmount", path]).status == 0)
    }

    @Test func tamperedFileGivesIOErrorAndOthersStillRead() async throws {
        let store = try CLIStore()
        let good = CLIStore.bytes(300_000, seed: 1)
        await #expect(try store.darkdisk(["import", try store.file("t", CLIStore.bytes(300_000, seed: 2)), "--node", "tampered", "--persistent"]).status == 0)
        await #expect(try store.darkdisk(["import", try store.file("g", good), "--node", "good", "--persistent"]).status == 0)
        // Flip one bit in the second chunk of the tampered node's stored file.
        let export = try await #require(try store.manager().files.nodeFile(NodeID("tampered")))
        let path = export.cryptoFile.path
        let chunkSize = try CryptoFileReader(path: path, key: export.cryptoFile.key).header.chunkSize
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        let offset = UInt64(80 + chunkSize + 16 + 100)
        try handle.seek(toOffset: offset)
        var byte = try #require(try handle.read(upToCount: 1))
        byte[0] ^= 0x01
        try handle.seek(toOffset: offset)
        try handle.write(contentsOf: byte)
        try handle.close()

        let mount = try Mount(store)
        let bad = try await Shell.sh("cat \(Shell.quote(mount.path + "/nodes/tampered/data")) > /dev/null")
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("Input/output error"), "\(bad.stderr)")
        // The first chunk is intact and still readable on its own.
        let head = try await Shell.sh("head -c 1000 \(Shell.quote(mount.path + "/nodes/tampered/data"))")
        #expect(head.stdout == CLIStore.bytes(300_000, seed: 2).prefix(1000))
        let ok = try await Shell.sh("cat \(Shell.quote(mount.path + "/nodes/good/data"))")
        #expect(ok.status == 0)
        #expect(ok.stdout == good)
        await #expect(eventually(within: 5) { mount.log.contains("node tampered data: chunk 1 ") }, "log: \(mount.log)")
    }

    @Test func treeHasThumbnailsMetadataAndAvatars() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["import", "-", "--node", "n1"], stdin: Data("data".utf8)).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--node", "n1", "--kind", "thumbnail"], stdin: Data("thumb".utf8)).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--node", "n1", "--kind", "metadata"], stdin: Data("{}".utf8)).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--user", "alice", "--identity", "github|42"], stdin: Data("face".utf8)).status == 0)
        let mount = try Mount(store)
        await #expect(try Shell.sh("ls \(Shell.quote(mount.path))").output == "avatars\nfiles\nnodes\nthumbs\n")
        await #expect(try Shell.sh("ls \(Shell.quote(mount.path + "/nodes/n1"))").output == "data\nmetadata\nthumbnail\n")
        await #expect(try Shell.sh("cat \(Shell.quote(mount.path + "/nodes/n1/metadata"))").output == "{}")
        await #expect(try Shell.sh("cat \(Shell.quote(mount.path + "/thumbs/n1"))").output == "thumb")
        await #expect(try Shell.sh("cat \(Shell.quote(mount.path + "/nodes/n1/thumbnail"))").output == "thumb")
        await #expect(try Shell.sh("cat \(Shell.quote(mount.path + "/avatars/alice/github|42"))").output == "face")
        await #expect(try Shell.sh("cat \(Shell.quote(mount.path + "/nodes/n2/data"))").status != 0)
        let write = try await Shell.sh("echo x > \(Shell.quote(mount.path + "/nodes/n1/data"))")
        #expect(write.status != 0, "the mount is read-only")
        #expect(write.stderr.contains("Read-only file system"), "\(write.stderr)")
        // No attributes yet, but asking is not an error that makes the kernel give up (ENODATA, not ENOSYS).
        let getfattr = try await Shell.sh("getfattr -n user.darkdisk.nothing \(Shell.quote(mount.path + "/nodes/n1/data"))")
        #expect(getfattr.stderr.contains("No such attribute"), "\(getfattr.stderr)")
        await #expect(try Shell.sh("df \(Shell.quote(mount.path))").status == 0)
    }

    @Test func commandsWorkWhileMountedAndNewImportsAppear() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["import", "-", "--node", "first"], stdin: Data("1".utf8)).status == 0)
        let mount = try Mount(store)
        await #expect(try store.darkdisk(["import", "-", "--node", "second"], stdin: Data("2".utf8)).status == 0)
        await #expect(try store.darkdisk(["status"]).status == 0)
        await #expect(eventually(within: 10) { (try? Shell.sh("cat \(Shell.quote(mount.path + "/nodes/second/data"))").output) == "2" })
        // Replacing a node's data is seen by the next open (the kernel cache is dropped for a new version).
        await #expect(try Shell.sh("cat \(Shell.quote(mount.path + "/nodes/first/data"))").output == "1")
        await #expect(try store.darkdisk(["import", "-", "--node", "first"], stdin: Data("one, again".utf8)).status == 0)
        await #expect(eventually(within: 10) { (try? Shell.sh("cat \(Shell.quote(mount.path + "/nodes/first/data"))").output) == "one, again" })
    }

    @Test func mountCreatesAMissingMountPointAndTheStore() async throws {
        let store = try CLIStore()
        let mountpoint = store.directory + "/DarkDisk"
        let run = try await store.darkdisk(["mount", mountpoint])
        #expect(run.status == 0, "\(run.stderr)")
        defer { _ = try? Shell.run("/bin/fusermount3", ["-u", "-z", mountpoint]) }
        #expect(Mount.isMounted(mountpoint))
        await #expect(try Shell.sh("ls \(Shell.quote(mountpoint))").output == "avatars\nfiles\nnodes\nthumbs\n")
        await #expect(try store.darkdisk(["status"]).status == 0, "the store was created on first use")
    }

    @Test func unmountWithDarkdiskAndFusermount() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["import", "-", "--node", "n", "--persistent"], stdin: Data("still here".utf8)).status == 0)
        let first = try Mount(store)
        await #expect(try store.darkdisk(["unmount", first.path]).status == 0)
        #expect(!Mount.isMounted(first.path))
        await #expect(eventually(within: 10) { first.log.contains("unmounted") }, "the daemon exits cleanly: \(first.log)")

        let second = try Mount(store)
        await #expect(try Shell.sh("cat \(Shell.quote(second.path + "/nodes/n/data"))").output == "still here")
        await #expect(try Shell.run("/bin/fusermount3", ["-u", second.path]).status == 0)
        #expect(!Mount.isMounted(second.path))
        await #expect(try store.darkdisk(["export", "--node", "n"]).output == "still here")
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func signalsUnmountAForegroundDaemon(signal: Int32) async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["import", "-", "--node", "n", "--persistent"], stdin: Data("x".utf8)).status == 0)
        let mountpoint = store.directory + "/fg"
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        let pid = try Shell.spawn(Shell.darkdisk, ["mount", mountpoint, "--foreground", "--store", store.storePath])
        await #expect(eventually(within: 10) { Mount.isMounted(mountpoint) })
        await #expect(try Shell.sh("cat \(Shell.quote(mountpoint + "/nodes/n/data"))").output == "x")
        kill(pid, signal)
        await #expect(Shell.wait(pid, seconds: 20) == 0, "the daemon exits cleanly on the signal")
        #expect(!Mount.isMounted(mountpoint))
        await #expect(try store.darkdisk(["export", "--node", "n"]).output == "x")
    }
}
