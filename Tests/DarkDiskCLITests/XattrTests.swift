import DarkDiskTestSupport
import DarkDiskStore
import DarkDiskTestTraits
import Foundation
import Testing

/// The mount's extended attributes through real mounts and the real tools:
/// `getfattr`, `setfattr`, and raw `getxattr(2)` & co. (Python's ctypes) where the tools hide the details.
@Suite(.processSlots) struct XattrTests {
    static let fileNames = ["user.darkdisk.persistent", "user.darkdisk.expiration", "user.darkdisk.local"]
    static let rootNames = ["data", "thumbnails", "avatars"].flatMap { pool in
        ["max_size", "default_expiration", "size", "persistent_size", "cached_size"].map { "user.darkdisk.pool.\(pool).\($0)" }
    }

    @Test func filesAndRootListAndReadTheirAttributes() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["import", "-", "--node", "cached", "--expiration", "3600"], stdin: CLIStore.bytes(1000)).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--node", "kept", "--persistent"], stdin: CLIStore.bytes(2000)).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--node", "cached", "--kind", "thumbnail", "--expiration=-1"], stdin: Data("t".utf8)).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--user", "alice", "--identity", "github|42"], stdin: Data("face".utf8)).status == 0)
        let mount = try Mount(store)

        // Nothing is listed (tools that copy attributes must not carry darkdisk's); each reads by name.
        for path in ["/nodes/cached/data", "/nodes/kept/data", "/thumbs/cached", "/nodes/cached/thumbnail", "", "/avatars/alice/github|42"] {
            #expect(try getfattrDump(mount.path + path) == [:], "getfattr -d \(path) lists nothing")
        }
        #expect(try named(mount.path + "/nodes/cached/data", Self.fileNames)
                == ["user.darkdisk.expiration": "3600", "user.darkdisk.local": "full", "user.darkdisk.persistent": "0"])
        #expect(try named(mount.path + "/nodes/kept/data", Self.fileNames)
                == ["user.darkdisk.expiration": "0", "user.darkdisk.local": "full", "user.darkdisk.persistent": "1"])
        for path in ["/thumbs/cached", "/nodes/cached/thumbnail"] {
            #expect(try named(mount.path + path, Self.fileNames)
                    == ["user.darkdisk.expiration": "-1", "user.darkdisk.local": "full", "user.darkdisk.persistent": "0"], "\(path)")
        }
        #expect(try getfattr(mount.path + "/avatars/alice/github|42", "user.darkdisk.local") == "full")

        let root = try named(mount.path, Self.rootNames)
        #expect(root.keys.sorted() == Self.rootNames.sorted())
        let manager = try store.manager()
        for pool in Pool.allCases {
            let settings = try manager.files.settings(for: pool)
            #expect(root["user.darkdisk.pool.\(pool.rawValue).max_size"] == "\(settings.maxSize)")
            #expect(root["user.darkdisk.pool.\(pool.rawValue).default_expiration"] == "\(Int(settings.defaultExpiration))")
            #expect(root["user.darkdisk.pool.\(pool.rawValue).size"] == "\(try manager.files.storageSize(of: pool))")
            #expect(root["user.darkdisk.pool.\(pool.rawValue).persistent_size"] == "\(try manager.files.storageSize(of: pool, mode: .persistent))")
            #expect(root["user.darkdisk.pool.\(pool.rawValue).cached_size"] == "\(try manager.files.storageSize(of: pool, mode: .cache))")
        }
        #expect(root["user.darkdisk.pool.avatars.default_expiration"] == "604800", "the avatars pool expires after 7 days by default")
        #expect(try manager.files.storageSize(of: .data, mode: .persistent) > 2000, "kept's encrypted file is counted")

        // Other folders carry no attributes, and the names of one kind of inode are not answered by the other.
        for folder in ["/nodes", "/nodes/cached", "/thumbs", "/avatars", "/avatars/alice"] {
            #expect(try getfattrDump(mount.path + folder) == [:], "\(folder)")
            let asked = try await Shell.run("/usr/bin/getfattr", ["-n", "user.darkdisk.persistent", mount.path + folder])
            #expect(asked.stderr.contains("No such attribute"), "\(folder): \(asked.stderr)")
        }
        let poolOnFile = try await Shell.run("/usr/bin/getfattr", ["-n", "user.darkdisk.pool.data.size", mount.path + "/nodes/cached/data"])
        #expect(poolOnFile.status != 0 && poolOnFile.stderr.contains("No such attribute"), "\(poolOnFile.stderr)")
        let fileOnRoot = try await Shell.run("/usr/bin/getfattr", ["-n", "user.darkdisk.local", mount.path])
        #expect(fileOnRoot.status != 0 && fileOnRoot.stderr.contains("No such attribute"), "\(fileOnRoot.stderr)")
    }

    /// `rsync -aX backup/ MOUNT/` of a backup made from the mount wrote the backup's
    /// `user.darkdisk.pool.data.max_size` onto the root and evicted at once. No tool that copies attributes
    /// (`rsync -X`, `cp -a`, `tar --xattrs`) carries darkdisk's settings or states anywhere.
    @Test func toolsThatCopyAttributesNeverCarryDarkdisksSettings() async throws {
        let store = try CLIStore()
        let data = CLIStore.bytes(200_000, seed: 5)
        await #expect(try store.darkdisk(["import", "-", "--node", "c", "--persistent"], stdin: data).status == 0)
        let mount = try Mount(store)
        let maxSize = "user.darkdisk.pool.data.max_size"
        #expect(try setfattr(mount.path, maxSize, "1000").status == 0, "a small pool while the backup is made")
        let backup = store.directory + "/backup", archive = store.directory + "/backup.tar", copy = store.directory + "/copy"
        let out = try await Shell.sh("rsync -aX \(Shell.quote(mount.path))/ \(Shell.quote(backup))/ && cp -a \(Shell.quote(mount.path)) \(Shell.quote(copy))"
                               + " && tar --xattrs -cf \(Shell.quote(archive)) -C \(Shell.quote(mount.path)) .")
        #expect(out.status == 0, "copies out of the mount: \(out.stderr)")
        for path in [backup, backup + "/nodes/c/data", copy, copy + "/nodes/c/data"] {
            await #expect(try Shell.sh("getfattr -d -m - \(Shell.quote(path))").output.isEmpty, "\(path) got no attribute")
        }
        let listed = try await Shell.sh("tar --xattrs -tvf \(Shell.quote(archive)) --xattrs-include='*' -v")
        #expect(!listed.output.contains("darkdisk"), "the archive holds none of darkdisk's attributes: \(listed.output)")

        // The pool grows and holds a cache file; copying the backup back onto the mount (its files are
        // read-only here) leaves the limit and the file alone.
        #expect(try setfattr(mount.path, maxSize, "50000000").status == 0)
        await #expect(try store.darkdisk(["import", "-", "--node", "c2"], stdin: data).status == 0)
        _ = try await Shell.sh("rsync -aX \(Shell.quote(backup))/ \(Shell.quote(mount.path))/; tar --xattrs -xf \(Shell.quote(archive)) -C \(Shell.quote(mount.path))")
        #expect(try getfattr(mount.path, maxSize) == "50000000", "the restore did not set the backup's pool limit")
        #expect(try getfattr(mount.path + "/nodes/c2/data", "user.darkdisk.local") == "full", "nothing was evicted")
    }

    @Test func settingPersistentMigratesTheFile() async throws {
        let store = try CLIStore()
        let data = CLIStore.bytes(300_000, seed: 3)
        await #expect(try store.darkdisk(["import", "-", "--node", "n"], stdin: data).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--node", "n", "--kind", "thumbnail"], stdin: Data("thumb".utf8)).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--user", "alice", "--identity", "a"], stdin: Data("A".utf8)).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--user", "alice", "--identity", "b"], stdin: Data("B".utf8)).status == 0)
        let mount = try Mount(store)
        let manager = try store.manager()
        let path = mount.path + "/nodes/n/data"
        await #expect(try manager.files.storedFile(NodeID("n"))?.mode == .cache)

        #expect(try setfattr(path, "user.darkdisk.persistent", "1").status == 0)
        await #expect(try manager.files.storedFile(NodeID("n"))?.mode == .persistent)
        await #expect(try manager.files.storedFile(NodeID("n"), kind: .thumbnail)?.mode == .cache, "only the data moved")
        #expect(try getfattr(path, "user.darkdisk.persistent") == "1")
        await #expect(try Shell.sh("cat \(Shell.quote(path))").stdout == data, "the migrated file reads the same")
        #expect(try setfattr(path, "user.darkdisk.persistent", "1").status == 0, "setting it again is harmless")
        #expect(try setfattr(path, "user.darkdisk.persistent", "0").status == 0)
        await #expect(try manager.files.storedFile(NodeID("n"))?.mode == .cache)
        #expect(try getfattr(path, "user.darkdisk.persistent") == "0")

        // /thumbs/<id> is the node's thumbnail; an avatar moves with its user's other avatars.
        #expect(try setfattr(mount.path + "/thumbs/n", "user.darkdisk.persistent", "1").status == 0)
        await #expect(try manager.files.storedFile(NodeID("n"), kind: .thumbnail)?.mode == .persistent)
        #expect(try getfattr(mount.path + "/nodes/n/thumbnail", "user.darkdisk.persistent") == "1")
        #expect(try setfattr(mount.path + "/avatars/alice/a", "user.darkdisk.persistent", "1").status == 0)
        await #expect(try manager.files.storedAvatars(UserID("alice")).map(\.mode) == [.persistent, .persistent])

        // What the user sees in `status`: the persistent bytes moved.
        let status = try await store.darkdisk(["status", "--json"])
        let pools = try JSONDecoder().decode(StatusReport.self, from: status.stdout).pools
        let thumbnailSize = try await manager.files.storedFile(NodeID("n"), kind: .thumbnail)?.storedSize
        #expect(pools.first { $0.name == "thumbnails" }?.persistentSize == thumbnailSize)
        #expect(pools.first { $0.name == "avatars" }?.cachedSize == 0)
        await #expect(eventually(within: 10) { mount.log.contains("node n data: set user.darkdisk.persistent to 1") }, "log: \(mount.log)")
    }

    @Test func shrinkingTheDataPoolEvictsCacheFilesButNotPersistentOnes() async throws {
        let store = try CLIStore()
        for id in ["c1", "c2", "c3"] {
            await #expect(try store.darkdisk(["import", "-", "--node", id], stdin: CLIStore.bytes(100_000)).status == 0)
        }
        await #expect(try store.darkdisk(["import", "-", "--node", "p"], stdin: CLIStore.bytes(100_000)).status == 0)
        let mount = try Mount(store)
        let manager = try store.manager()
        #expect(try setfattr(mount.path + "/nodes/p/data", "user.darkdisk.persistent", "1").status == 0)
        #expect(try getfattr(mount.path, "user.darkdisk.pool.data.cached_size") != "0")

        #expect(try setfattr(mount.path, "user.darkdisk.pool.data.max_size", "0").status == 0)
        #expect(try manager.files.settings(for: .data).maxSize == 0)
        for id in ["c1", "c2", "c3"] { await #expect(try manager.files.storedFile(NodeID(id)) == nil, "\(id) was evicted at once") }
        await #expect(try manager.files.storedFile(NodeID("p"))?.mode == .persistent)
        #expect(try getfattr(mount.path, "user.darkdisk.pool.data.max_size") == "0")
        #expect(try getfattr(mount.path, "user.darkdisk.pool.data.cached_size") == "0")
        let persistent = try getfattr(mount.path, "user.darkdisk.pool.data.persistent_size")
        let stored = try await manager.files.storedFile(NodeID("p"))
        #expect(persistent == "\(stored!.storedSize)")
        #expect(try getfattr(mount.path, "user.darkdisk.pool.data.size") == persistent)
        await #expect(try Shell.sh("ls \(Shell.quote(mount.path + "/nodes"))").output.contains("p\n"))
        await #expect(try Shell.sh("cat \(Shell.quote(mount.path + "/nodes/p/data"))").stdout == CLIStore.bytes(100_000))

        // Other pools are their own.
        #expect(try setfattr(mount.path, "user.darkdisk.pool.thumbnails.max_size", "123456789").status == 0)
        #expect(try manager.files.settings(for: .thumbnails).maxSize == 123_456_789)
        #expect(try manager.files.settings(for: .data).maxSize == 0)
        #expect(try setfattr(mount.path, "user.darkdisk.pool.avatars.default_expiration", "-5").status == 0)
        #expect(try manager.files.settings(for: .avatars).defaultExpiration == -5)
        #expect(try getfattr(mount.path, "user.darkdisk.pool.avatars.default_expiration") == "-5")
        await #expect(try store.darkdisk(["config", "get", "pool.thumbnails.max_size"]).output == "123456789\n")
    }

    @Test func expirationIsKeptAndActsAtOnce() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["import", "-", "--node", "old"], stdin: Data("old".utf8)).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--node", "kept", "--persistent"], stdin: Data("kept".utf8)).status == 0)
        let mount = try Mount(store)
        let manager = try store.manager()
        let old = mount.path + "/nodes/old/data", kept = mount.path + "/nodes/kept/data"

        #expect(try setfattr(old, "user.darkdisk.expiration", "-1").status == 0)
        await #expect(try manager.files.storedFile(NodeID("old"))?.expiration == -1)
        #expect(try getfattr(old, "user.darkdisk.expiration") == "-1")
        #expect(try setfattr(old, "user.darkdisk.expiration", "86400\n").status == 0, "one trailing newline is fine")
        #expect(try getfattr(old, "user.darkdisk.expiration") == "86400")
        #expect(try setfattr(old, "user.darkdisk.expiration", "-9223372036854775808").status == 0, "Int64.min is a number of seconds")
        #expect(try getfattr(old, "user.darkdisk.expiration") == "-9223372036854775808")

        // A persistent file keeps its value (it matters once it is a cache file again) and does not expire.
        try? await Task.sleep(nanoseconds: UInt64((1.2) * 1e9))
        #expect(try setfattr(kept, "user.darkdisk.expiration", "1").status == 0)
        await #expect(try manager.files.storedFile(NodeID("kept"))?.expiration == 1)
        #expect(try getfattr(kept, "user.darkdisk.expiration") == "1")
        // A cache file modified more than a second ago, told to expire after one second, goes at once.
        #expect(try setfattr(old, "user.darkdisk.expiration", "1").status == 0)
        await #expect(try manager.files.storedFile(NodeID("old")) == nil)
        await #expect(try manager.files.storedFile(NodeID("kept")) != nil)
    }

    @Test func badValuesAreInvalidArguments() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["import", "-", "--node", "n"], stdin: Data("n".utf8)).status == 0)
        let mount = try Mount(store)
        let manager = try store.manager()
        let file = mount.path + "/nodes/n/data"
        let before = try manager.files.settings(for: .data)
        // setfattr decodes `-v 0x…` as hex: the bytes arrive exactly as written, NULs included.
        let bad: [(String, String, String)] = [
            (file, "user.darkdisk.persistent", "2"), (file, "user.darkdisk.persistent", "-1"),
            (file, "user.darkdisk.persistent", "0x"), (file, "user.darkdisk.persistent", "true"),
            (file, "user.darkdisk.persistent", "0x2031"), (file, "user.darkdisk.persistent", "0x3120"),
            (file, "user.darkdisk.persistent", "0x3100"), (file, "user.darkdisk.persistent", "0x0031"),
            (file, "user.darkdisk.persistent", "0x310a0a"), (file, "user.darkdisk.persistent", "0x310d0a"),
            (file, "user.darkdisk.persistent", "+1"), (file, "user.darkdisk.persistent", "11"),
            (file, "user.darkdisk.expiration", "1.5"), (file, "user.darkdisk.expiration", "1e3"),
            (file, "user.darkdisk.expiration", "--1"), (file, "user.darkdisk.expiration", "-"),
            (file, "user.darkdisk.expiration", "9223372036854775808"), (file, "user.darkdisk.expiration", "-9223372036854775809"),
            (file, "user.darkdisk.expiration", String(repeating: "9", count: 40)),
            (file, "user.darkdisk.expiration", "0x" + String(repeating: "31", count: 65)),
            (file, "user.darkdisk.expiration", "0x" + String(repeating: "30", count: 60_000)),
            (mount.path, "user.darkdisk.pool.data.max_size", "-1"), (mount.path, "user.darkdisk.pool.data.max_size", "10M"),
            (mount.path, "user.darkdisk.pool.data.max_size", "9223372036854775808"),
            (mount.path, "user.darkdisk.pool.data.max_size", "0x313233ff"),
            (mount.path, "user.darkdisk.pool.data.default_expiration", "never"),
            (mount.path, "user.darkdisk.pool.data.default_expiration", " 10"),
        ]
        for (path, name, value) in bad {
            let run = try setfattr(path, name, value)
            #expect(run.status != 0 && run.stderr.contains("Invalid argument"), "\(name) = \(value.prefix(40)): \(run.stderr)")
        }
        await #expect(try manager.files.storedFile(NodeID("n"))?.mode == .cache)
        await #expect(try manager.files.storedFile(NodeID("n"))?.expiration == 0)
        #expect(try manager.files.settings(for: .data) == before)
        // No value at all (`setfattr -n NAME`) is an empty value.
        let empty = try await Shell.run("/usr/bin/setfattr", ["-n", "user.darkdisk.persistent", file])
        #expect(empty.stderr.contains("Invalid argument"), "\(empty.stderr)")
        // The largest allowed numbers are accepted.
        #expect(try setfattr(mount.path, "user.darkdisk.pool.data.max_size", "9223372036854775807").status == 0)
        #expect(try manager.files.settings(for: .data).maxSize == UInt64(Int64.max))
        #expect(try setfattr(file, "user.darkdisk.persistent", "0x310a").status == 0, "1 and a newline")
        await #expect(try manager.files.storedFile(NodeID("n"))?.mode == .persistent)
    }

    @Test func unknownReadOnlyAndRemovedNames() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["import", "-", "--node", "n"], stdin: Data("n".utf8)).status == 0)
        let mount = try Mount(store)
        let file = mount.path + "/nodes/n/data"
        for name in ["user.darkdisk.nothing", "user.darkdisk.persistent.", "user.darkdisk.Persistent", "user.darkdisk.pool.data",
                     "user.darkdisk.pool.video.size", "user.darkdisk.pool.data.size", "user.other", "trusted.darkdisk", "security.selinux",
                     "user.darkdisk.persistent\u{00E9}"] {
            let get = try await Shell.run("/usr/bin/getfattr", ["-n", name, file])
            #expect(get.status != 0 && get.stderr.contains("No such attribute"), "get \(name): \(get.stderr)")
            let set = try setfattr(file, name, "1")
            #expect(set.status != 0 && set.stderr.contains("No such attribute"), "set \(name): \(set.stderr)")
            let remove = try await Shell.run("/usr/bin/setfattr", ["-x", name, file])
            #expect(remove.status != 0 && remove.stderr.contains("No such attribute"), "remove \(name): \(remove.stderr)")
        }
        // Read-only attributes, and removing ours: "Operation not permitted".
        for (path, name, value) in [(file, "user.darkdisk.sync", "synced"), (mount.path, "user.darkdisk.pool.data.size", "0"),
                                    (mount.path, "user.darkdisk.pool.avatars.cached_size", "0"),
                                    (mount.path, "user.darkdisk.pool.thumbnails.persistent_size", "0")] {
            let set = try setfattr(path, name, value)
            #expect(set.status != 0 && set.stderr.contains("Operation not permitted"), "set \(name): \(set.stderr)")
        }
        for (path, name) in [(file, "user.darkdisk.persistent"), (file, "user.darkdisk.local"), (mount.path, "user.darkdisk.pool.data.max_size")] {
            let remove = try await Shell.run("/usr/bin/setfattr", ["-x", name, path])
            #expect(remove.status != 0 && remove.stderr.contains("Operation not permitted"), "remove \(name): \(remove.stderr)")
        }
        #expect(try getfattr(file, "user.darkdisk.local") == "full")

        // Names that are not UTF-8 (raw bytes through the syscall) match nothing.
        let probe = try Probe.run([
            ["get", file, Probe.hex("user.darkdisk.persistent") + "ff", "64"],
            ["get", file, "ff" + Probe.hex("ser.darkdisk.persistent"), "64"],
            ["set", file, Probe.hex("user.darkdisk.persistent") + "c0", Probe.hex("1"), "0"],
        ])
        #expect(probe.map(\.errno) == ["ENODATA", "ENODATA", "ENODATA"], "\(probe)")
    }

    @Test func sizeQueriesRangeErrorsAndFlags() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["import", "-", "--node", "n"], stdin: Data("n".utf8)).status == 0)
        let mount = try Mount(store)
        let file = mount.path + "/nodes/n/data"
        let results = try Probe.run([
            ["get", file, Probe.hex("user.darkdisk.local"), "0"],
            ["get", file, Probe.hex("user.darkdisk.local"), "3"],
            ["get", file, Probe.hex("user.darkdisk.local"), "4"],
            ["get", file, Probe.hex("user.darkdisk.local"), "4096"],
            ["list", file, "0"],
            ["list", file, "1"],
            ["list", file, "100"],
            ["list", file, "4096"],
            ["list", mount.path, "0"],
            ["list", mount.path, "4096"],
            ["list", mount.path + "/nodes", "0"],
            ["list", mount.path + "/nodes", "100"],
            ["set", file, Probe.hex("user.darkdisk.persistent"), Probe.hex("1"), "1"],  // XATTR_CREATE
            ["set", file, Probe.hex("user.darkdisk.persistent"), Probe.hex("1"), "2"],  // XATTR_REPLACE
            ["get", file, Probe.hex("user.darkdisk.persistent"), "1"],
            ["get", mount.path, Probe.hex("user.darkdisk.pool.data.max_size"), "1"],
        ])
        #expect(results[0] == Probe.Result(returned: 4, errno: "", value: ""), "a size query returns the size")
        #expect(results[1].errno == "ERANGE")
        #expect(results[2] == Probe.Result(returned: 4, errno: "", value: "full"))
        #expect(results[3] == Probe.Result(returned: 4, errno: "", value: "full"))
        // Attributes are read and set by name; none is listed, on files, the root or folders.
        for (index, result) in results[4...11].enumerated() {
            #expect(result == Probe.Result(returned: 0, errno: "", value: ""), "listxattr \(index) lists nothing")
        }
        #expect(results[12].errno == "EEXIST", "our attributes always exist")
        #expect(results[13] == Probe.Result(returned: 0, errno: "", value: ""))
        #expect(results[14] == Probe.Result(returned: 1, errno: "", value: "1"))
        #expect(results[15].errno == "ERANGE", "26214400 does not fit one byte")
    }

    @Test func aFileNoLongerStoredReadsAsNotLocalAndCannotBeMigrated() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["import", "-", "--node", "gone"], stdin: CLIStore.bytes(10_000)).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--node", "half"], stdin: CLIStore.bytes(10_000)).status == 0)
        let mount = try Mount(store)
        let manager = try store.manager()
        // Keep the inodes open (a descriptor reaches the inode without a lookup), then take the files away:
        // the mount still knows the entries, the store no longer has them. Meanwhile the test records a
        // partial download of `half`, as the download manager does.
        let deleted = store.directory + "/deleted", recorded = store.directory + "/recorded"
        let script = """
            exec 3< \(Shell.quote(mount.path + "/nodes/gone/data")) 4< \(Shell.quote(mount.path + "/nodes/half/data"))
            \(Shell.quote(Shell.darkdisk)) delete --node gone --store \(Shell.quote(store.storePath)) || exit 9
            \(Shell.quote(Shell.darkdisk)) delete --node half --store \(Shell.quote(store.storePath)) || exit 9
            touch \(Shell.quote(deleted))
            while [ ! -e \(Shell.quote(recorded)) ]; do sleep 0.05; done
            for fd in 3 4; do
                getfattr --absolute-names --only-values -n user.darkdisk.local /proc/$$/fd/$fd; echo
                getfattr --absolute-names --only-values -n user.darkdisk.persistent /proc/$$/fd/$fd; echo
                getfattr --absolute-names --only-values -n user.darkdisk.expiration /proc/$$/fd/$fd; echo
            done
            setfattr -n user.darkdisk.persistent -v 1 /proc/$$/fd/3
            setfattr -n user.darkdisk.expiration -v 10 /proc/$$/fd/4
            exit 0
            """
        let pid = try Shell.spawn("/bin/sh", ["-c", script], stdout: store.directory + "/out", stderr: store.directory + "/err")
        await #expect(eventually(within: 20) { FileManager.default.fileExists(atPath: deleted) })
        var partial = try await manager.files.beginPartialDownload(NodeID("half"), etag: "e1", size: 10_000)
        #expect(FileManager.default.createFile(atPath: partial.path, contents: Data(count: 4096)))
        partial.add(0..<4096)
        try await manager.files.savePartialDownload(partial)
        #expect(FileManager.default.createFile(atPath: recorded, contents: nil))
        await #expect(Shell.wait(pid, seconds: 30) == 0)

        let out = try String(contentsOfFile: store.directory + "/out", encoding: .utf8)
        #expect(out == "none\n0\n0\npartial 40%\n0\n0\n", "\(out)")
        let err = try String(contentsOfFile: store.directory + "/err", encoding: .utf8)
        #expect(err == "setfattr: /proc/\(pid)/fd/3: Object is remote\nsetfattr: /proc/\(pid)/fd/4: Object is remote\n", "\(err)")
        await #expect(eventually(within: 10) { mount.log.contains("node gone data is not stored here") }, "log: \(mount.log)")
        await #expect(try manager.files.storedFile(NodeID("gone")) == nil)
    }

    @Test func writesAreRefusedAsOnAReadOnlyFileSystem() async throws {
        let store = try CLIStore()
        let data = Data("unchanged".utf8)
        await #expect(try store.darkdisk(["import", "-", "--node", "n"], stdin: data).status == 0)
        let mount = try Mount(store)
        let dir = Shell.quote(mount.path + "/nodes/n"), file = Shell.quote(mount.path + "/nodes/n/data")
        let outside = try store.file("outside", Data("x".utf8))
        let commands = [
            "touch \(file)", "touch \(dir)/new", "touch -a \(file)", "mkdir \(dir)/sub", "mkdir \(Shell.quote(mount.path))/top",
            "rm -f \(file)", "rmdir \(dir)", "mv \(file) \(dir)/moved", "mv \(dir) \(Shell.quote(mount.path + "/nodes/m"))",
            "chmod 600 \(file)", "chmod 700 \(dir)", "truncate -s 0 \(file)", "truncate -s 100 \(file)",
            "ln \(file) \(dir)/hard", "ln -s data \(dir)/soft", "mknod \(dir)/fifo p", "echo x >> \(file)", "echo x > \(dir)/new2",
            "cp \(Shell.quote(outside)) \(dir)/copied", "fallocate -l 4096 \(file)", "dd if=/dev/zero of=\(file) bs=1 count=1 conv=notrunc status=none",
        ]
        for command in commands {
            let run = try await Shell.sh(command)
            #expect(run.status != 0, "\(command) succeeded")
            #expect(run.stderr.contains("Read-only file system"), "\(command): \(run.stderr)")
        }
        await #expect(try Shell.sh("cat \(file)").stdout == data)
        await #expect(try Shell.sh("ls -a \(dir)").output == ".\n..\ndata\n")
        await #expect(try Shell.sh("stat -c %a \(file)").output != "600\n")
    }

    // MARK: - Helpers

    /// `getfattr -d -m -` of a path as a name → value dictionary (the quotes removed).
    private func getfattrDump(_ path: String) throws -> [String: String] {
        let run = try Shell.run("/usr/bin/getfattr", ["--absolute-names", "-d", "-m", "-", path])
        #expect(run.status == 0, "getfattr -d \(path): \(run.stderr)")
        var result: [String: String] = [:]
        for line in run.output.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            result[String(parts[0])] = String(parts[1].dropFirst().dropLast())
        }
        return result
    }

    /// Each of `names` read by name (`getfattr -n`), as a name → value dictionary.
    private func named(_ path: String, _ names: [String]) throws -> [String: String] {
        var result: [String: String] = [:]
        for name in names { result[name] = try getfattr(path, name) }
        return result
    }

    /// `getfattr -n NAME --only-values`: the raw value, or nil with the error recorded.
    private func getfattr(_ path: String, _ name: String) throws -> String? {
        let run = try Shell.run("/usr/bin/getfattr", ["--absolute-names", "--only-values", "-n", name, path])
        #expect(run.status == 0, "getfattr -n \(name) \(path): \(run.stderr)")
        return run.status == 0 ? run.output : nil
    }

    private func setfattr(_ path: String, _ name: String, _ value: String) throws -> Run {
        try Shell.run("/usr/bin/setfattr", ["-n", name, "-v", value, path])
    }

    private struct StatusReport: Decodable {
        struct Pool: Decodable { let name: String; let persistentSize: UInt64; let cachedSize: UInt64 }
        let pools: [Pool]
    }
}

/// Raw `getxattr(2)`, `listxattr(2)`, `setxattr(2)` and `removexattr(2)` calls through Python's ctypes: exact
/// buffer sizes (for size queries and `ERANGE`), flags, and names and values with any bytes.
enum Probe {
    struct Result: Equatable, CustomStringConvertible {
        let returned: Int
        let errno: String
        let value: String
        var description: String { "(\(returned), \(errno), \(value.debugDescription))" }
    }

    static func hex(_ text: String) -> String { text.utf8.map { String(format: "%02x", $0) }.joined() }

    /// Runs each call (`get PATH NAMEHEX SIZE`, `list PATH SIZE`, `set PATH NAMEHEX VALUEHEX FLAGS`,
    /// `remove PATH NAMEHEX`) and returns what it returned, its errno name and the bytes it read.
    static func run(_ calls: [[String]]) throws -> [Result] {
        let script = #"""
        import ctypes, errno, json, sys
        libc = ctypes.CDLL(None, use_errno=True)
        out = []
        for call in json.loads(sys.argv[1]):
            op, path = call[0], call[1].encode()
            buffer = None
            ctypes.set_errno(0)
            if op == "get":
                size = int(call[3]); buffer = ctypes.create_string_buffer(size) if size else None
                r = libc.getxattr(path, bytes.fromhex(call[2]), buffer, ctypes.c_size_t(size))
            elif op == "list":
                size = int(call[2]); buffer = ctypes.create_string_buffer(size) if size else None
                r = libc.listxattr(path, buffer, ctypes.c_size_t(size))
            elif op == "set":
                value = bytes.fromhex(call[3])
                r = libc.setxattr(path, bytes.fromhex(call[2]), value, ctypes.c_size_t(len(value)), int(call[4]))
            else:
                r = libc.removexattr(path, bytes.fromhex(call[2]))
            e = errno.errorcode.get(ctypes.get_errno(), "") if r < 0 else ""
            value = buffer.raw[:r].hex() if (buffer is not None and r > 0) else ""
            out.append([r, e, value])
        print(json.dumps(out))
        """#
        let data = try JSONSerialization.data(withJSONObject: calls)
        let run = try Shell.run("/usr/bin/python3", ["-c", script, String(decoding: data, as: UTF8.self)])
        guard run.status == 0, let rows = try JSONSerialization.jsonObject(with: run.stdout) as? [[Any]] else {
            throw ProbeFailed(message: run.stderr)
        }
        return rows.map { row in
            let bytes = stride(from: 0, to: (row[2] as! String).count, by: 2).map { i -> UInt8 in
                let text = row[2] as! String
                let start = text.index(text.startIndex, offsetBy: i)
                return UInt8(text[start..<text.index(start, offsetBy: 2)], radix: 16)!
            }
            return Result(returned: row[0] as! Int, errno: row[1] as! String, value: String(decoding: bytes, as: UTF8.self))
        }
    }

    struct ProbeFailed: Error, CustomStringConvertible {
        let message: String
        var description: String { "xattr probe failed: \(message)" }
    }
}
