import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Pins through real mounts: two stores on one bucket, files written on A, pinned on
/// B with `darkdisk pin` and `setfattr`, kept there against a data pool of 0 bytes, fetched again when they
/// change, freed by `unpin` and `evict`; and a pinned download cut by `kill -9` that resumes.
@Suite(.processSlots) struct PinMountTests {
    static func local(_ path: String) -> String? { try? Shell.xattr("user.darkdisk.local", path) }

    @Test func aPinnedFolderIsKeptOnThisDeviceAndFollowsTheRemote() async throws {
        let setup = try RemoteBucket()
        try setup.join("file://" + setup.bucket)
        let mountA = try Mount(setup.a, options: ["--passphrase-file", setup.passphrase, "--poll-interval", "1"])
        let filesA = mountA.path + "/files"
        var contents: [String: Data] = [:]
        try FileManager.default.createDirectory(atPath: filesA + "/album/inner", withIntermediateDirectories: true)
        for (index, name) in ["album/a.bin", "album/b.bin", "album/inner/c.bin", "other.bin"].enumerated() {
            contents[name] = CLIStore.bytes(150_000 + index * 1000, seed: UInt64(10 + index))
            try contents[name]!.write(to: URL(fileURLWithPath: filesA + "/" + name))
        }
        #expect(await eventually(within: 60) { contents.keys.allSatisfy { (try? Shell.xattr("user.darkdisk.sync", filesA + "/" + $0)) == "synced" } },
                "A uploads its files\n\(mountA.log)")
        // B keeps nothing in its cache pool: only what is pinned stays.
        try RemoteBucket.check(try setup.darkdiskB(["config", "set", "pool.data.max_size", "0"]), "config set")
        let mountB = try setup.mountB(["--poll-interval", "1"])
        let filesB = mountB.path + "/files"
        #expect(await eventually(within: 30) { contents.keys.allSatisfy { FileManager.default.fileExists(atPath: filesB + "/" + $0) } },
                "B sees A's files\n\(mountB.log)")
        #expect(Self.local(filesB + "/album/a.bin") == "none")
        #expect(try Shell.xattr("user.darkdisk.pin", filesB + "/album/a.bin") == "0")

        // Pinning the folder downloads everything below it, in the background, to persistent storage.
        let pin = try setup.darkdiskB(["pin", filesB + "/album"])
        #expect(pin.status == 0, "\(pin.stderr)")
        let pinned = ["album/a.bin", "album/b.bin", "album/inner/c.bin"]
        #expect(await eventually(within: 60) { pinned.allSatisfy { Self.local(filesB + "/" + $0) == "full" } },
                "pinned files downloaded: \(pinned.map { Self.local(filesB + "/" + $0) ?? "?" })\n\(mountB.log)")
        for name in pinned {
            #expect(try Shell.xattr("user.darkdisk.pin", filesB + "/" + name) == "1", "\(name) inherits the folder's pin")
            #expect(try Shell.xattr("user.darkdisk.persistent", filesB + "/" + name) == "1", "\(name) is persistent")
            #expect(FileManager.default.contents(atPath: filesB + "/" + name) == contents[name])
        }
        #expect(Self.local(filesB + "/other.bin") == "none", "a file outside the folder is not fetched")
        let status = try setup.darkdiskB(["status"])
        #expect(!status.output.contains("pinned, still to download"), "\(status.output)")

        // A file arriving in the pinned folder is fetched; a pinned file changed elsewhere is fetched again,
        // and a descriptor opened before reads the new version (as on a local disk, where the file was
        // rewritten in place), although the old one it opened was dropped.
        let held = try #require(FileHandle(forReadingAtPath: filesB + "/album/a.bin"))
        defer { try? held.close() }
        let arrived = CLIStore.bytes(90_000, seed: 20)
        try arrived.write(to: URL(fileURLWithPath: filesA + "/album/new.bin"))
        let changed = CLIStore.bytes(120_000, seed: 21)
        try changed.write(to: URL(fileURLWithPath: filesA + "/album/a.bin"))
        #expect(await eventually(within: 60) {
            Self.local(filesB + "/album/new.bin") == "full" && Self.local(filesB + "/album/a.bin") == "full"
                && (try? FileManager.default.attributesOfItem(atPath: filesB + "/album/a.bin")[.size] as? Int) == changed.count
        }, "new.bin: \(Self.local(filesB + "/album/new.bin") ?? "?"), a.bin: \(Self.local(filesB + "/album/a.bin") ?? "?")\n\(mountB.log)")
        #expect(FileManager.default.contents(atPath: filesB + "/album/new.bin") == arrived)
        #expect(FileManager.default.contents(atPath: filesB + "/album/a.bin") == changed)
        // (Within a second: the store watcher tells the handles when it tells the kernel. Each look drops the
        // pages first, so the handle itself is read.)
        var read = Data()
        #expect(await eventually(within: 15) {
            _ = try? Shell.sh("sync; echo 1 > /proc/sys/vm/drop_caches")
            try? held.seek(toOffset: 0)
            read = (try? held.readToEnd()) ?? Data()
            return read == changed
        }, "the open descriptor reads the new version, not \(read.count) bytes (the old one: \(read == contents["album/a.bin"]))\n\(mountB.log)")

        // A file written into the pinned folder here stays persistent after its upload.
        let written = CLIStore.bytes(50_000, seed: 22)
        try written.write(to: URL(fileURLWithPath: filesB + "/album/here.bin"))
        #expect(await eventually(within: 60) { (try? Shell.xattr("user.darkdisk.sync", filesB + "/album/here.bin")) == "synced" }, "\(mountB.log)")
        #expect(try Shell.xattr("user.darkdisk.persistent", filesB + "/album/here.bin") == "1", "an upload does not free a pinned file")

        // A pinned file cannot be evicted; one file unpinned inside the pinned folder can, and goes.
        let refused = try setup.darkdiskB(["evict", filesB + "/album/b.bin"])
        #expect(refused.status == 1 && refused.stderr.contains("is pinned; unpin it first"), "\(refused.stderr)")
        #expect(Self.local(filesB + "/album/b.bin") == "full")
        let unpinOne = try await Shell.sh("setfattr -n user.darkdisk.pin -v 0 \(Shell.quote(filesB + "/album/b.bin"))")
        #expect(unpinOne.status == 0, "\(unpinOne.stderr)")
        #expect(try Shell.xattr("user.darkdisk.persistent", filesB + "/album/b.bin") == "0", "unpinned: back in the cache pool")
        #expect(await eventually(within: 30) { Self.local(filesB + "/album/b.bin") == "none" }, "a pool of 0 bytes evicts it")
        #expect(Self.local(filesB + "/album/inner/c.bin") == "full", "the rest of the folder stays")

        // Unpinning the folder (and what was set below it) frees everything; a synced file evicts at once.
        let unpin = try setup.darkdiskB(["unpin", "--recursive", filesB + "/album"])
        #expect(unpin.status == 0, "\(unpin.stderr)")
        #expect(await eventually(within: 30) { pinned.allSatisfy { Self.local(filesB + "/" + $0) == "none" } },
                "\(pinned.map { Self.local(filesB + "/" + $0) ?? "?" })")
        _ = FileManager.default.contents(atPath: filesB + "/other.bin")
        let evict = try await Shell.sh("setfattr -n user.darkdisk.local -v none \(Shell.quote(filesB + "/other.bin"))")
        #expect(evict.status == 0, "\(evict.stderr)")
        #expect(Self.local(filesB + "/other.bin") == "none")
        #expect(FileManager.default.contents(atPath: filesB + "/other.bin") == contents["other.bin"], "read again from the remote")
    }

    @Test func fetchInTheBackgroundIsHandedToTheRunningMount() async throws {
        let remote = try RemoteBucket()
        let data = CLIStore.bytes(300_000, seed: 40)
        try remote.push("bg", data)
        try remote.join("file://" + remote.bucket)
        let alone = try remote.darkdiskB(["fetch", "--node", "bg", "--background"])
        #expect(alone.status == 1 && alone.stderr == "darkdisk: no mount of this store is running to hand the download to; mount it, or fetch without --background\n",
                "\(alone.stderr)")
        let mount = try remote.mountB()
        let handed = try remote.darkdiskB(["fetch", "--node", "bg", "--background", "--persistent"])
        #expect(handed.status == 0 && handed.stderr.contains("handed node 'bg' to the running mount"), "\(handed.stderr)")
        let path = mount.path + "/nodes/bg/data"
        #expect(await eventually(within: 30) { Self.local(path) == "full" }, "\(mount.log)")
        #expect(try Shell.xattr("user.darkdisk.persistent", path) == "1")
        #expect(FileManager.default.contents(atPath: path) == data)
    }

    @Test func aPinnedDownloadCutByKill9ResumesAfterRemount() async throws {
        let remote = try RemoteBucket()
        let big = try randomBytes(24 << 20)
        try remote.push("big", big)
        let cloudSize = try remote.cloudSize("big")
        let proxy = try FaultProxy(servingRoot: remote.bucket)
        defer { withExtendedLifetime(proxy) {} }
        try remote.join(proxy.url)
        try RemoteBucket.check(try remote.darkdiskB(["config", "set", "pool.data.max_size", "0"]), "config set")
        // The proxy holds the download once half the cloud file went out (connections open), so the kill
        // comes in the middle whatever the machine's load; and once the daemon has recorded what it received.
        try proxy.control(["reset_stats": true, "throttle": 4 << 20, "hold": cloudSize / 2])
        let mount = try remote.mountB()
        let data = mount.path + "/nodes/big/data"
        let pin = try remote.darkdiskB(["pin", "--node", "big"])
        #expect(pin.status == 0, "\(pin.stderr)")
        #expect(await eventually(within: 60) {
            guard let text = Self.local(data), text.hasPrefix("partial "), let percent = Int(text.dropFirst(8).dropLast()) else { return false }
            return percent >= 40
        }, "the pin's download runs: \(Self.local(data) ?? "?")")
        #expect(await eventually(within: 60) {
            ((try? remote.darkdiskB(["status", "--json"]).partialDownloadBytes()) ?? 0) > cloudSize / 2 - (2 << 20)
        }, "the daemon records what it received")
        let status = try remote.darkdiskB(["status"])
        #expect(status.output.contains("pinned, still to download: 1 file, 24.0 MiB"), "\(status.output)")
        let daemon = try #require(MountDaemon.pid(serving: mount.path))
        kill(daemon, SIGKILL)
        _ = try await Shell.sh("fusermount3 -u -z \(Shell.quote(mount.path))")
        try proxy.control(["throttle": 0, "hold": NSNull()])
        // (A new Mount: the first one's teardown would unmount the path again when replaced.)
        let remounted = try remote.mountB()
        defer { withExtendedLifetime(mount) {} }
        #expect(await eventually(within: 60) { Self.local(remounted.path + "/nodes/big/data") == "full" }, "\(remounted.log)")
        #expect(try Shell.xattr("user.darkdisk.persistent", remounted.path + "/nodes/big/data") == "1")
        #expect(try Shell.sha256(of: remounted.path + "/nodes/big/data") == sha256Hex(big))
        let sent = try proxy.bytes(try remote.cloudObject("big"))
        #expect(sent < cloudSize + cloudSize / 4, "resumed, not started again: \(sent) bytes sent for a \(cloudSize)-byte cloud file")
    }
}
