import DarkDiskTestTraits
import Foundation
import Testing

/// A store on a full disk failed every command, `delete` (the way to free space) and
/// `status` included, with "SQLite error 10: disk I/O error"; on a read-only file system even `export`
/// and `status` failed.
@Suite(.processSlots) struct FullDiskTests {
    /// A 20 MiB tmpfs holding a store with two 6 MiB persistent nodes; unmounted when the test ends.
    final class SmallDisk {
        let store: CLIStore
        let mountpoint: String
        var storePath: String { mountpoint + "/store" }
        let data = CLIStore.bytes(6 << 20, seed: 11)

        init() throws {
            store = try CLIStore()
            mountpoint = store.directory + "/disk"
            try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
            let mount = try Shell.run("/bin/mount", ["-t", "tmpfs", "-o", "size=20m", "tmpfs", mountpoint])
            guard mount.status == 0 else { throw Mount.MountFailed(message: mount.stderr) }
            let input = try store.file("in", data)
            for node in ["a", "b"] {
                _ = try darkdisk(["import", input, "--node", node, "--persistent"])
            }
        }

        deinit { _ = try? Shell.run("/bin/umount", ["-l", mountpoint]) }

        func darkdisk(_ arguments: [String]) throws -> Run {
            try Shell.run(Shell.darkdisk, arguments + ["--store", storePath])
        }

        /// Fills what is left of the disk.
        func fill() throws {
            _ = try Shell.sh("dd if=/dev/zero of=\(Shell.quote(mountpoint + "/filler")) bs=64k status=none")
            let df = try Shell.sh("df --output=avail -B1 \(Shell.quote(mountpoint)) | tail -1")
            #expect(Int(df.output.trimmingCharacters(in: .whitespacesAndNewlines)) == 0, "the disk is full: \(df.output)")
        }
    }

    /// A new store whose folder is a 100 MiB tmpfs (a disk that fills); unmounted when released.
    final class StoreOnTmpfs {
        let store: CLIStore

        init() async throws {
            store = try CLIStore()
            try FileManager.default.createDirectory(atPath: store.storePath, withIntermediateDirectories: true)
            let tmpfs = try await Shell.run("/bin/mount", ["-t", "tmpfs", "-o", "size=100m", "tmpfs", store.storePath])
            guard tmpfs.status == 0 else { throw Mount.MountFailed(message: tmpfs.stderr) }
            let initialized = try await store.darkdisk(["init"])
            guard initialized.status == 0 else { throw Mount.MountFailed(message: initialized.stderr) }
        }

        deinit { _ = try? Shell.run("/bin/umount", ["-l", store.storePath]) }
    }

    @Test func deleteFreesAFullDiskAndErrorsSayNoSpace() async throws {
        let disk = try SmallDisk()
        try disk.fill()
        let status = try disk.darkdisk(["status"])
        #expect(status.status == 0, "status on a full disk: \(status.stderr)")
        let importRun = try disk.darkdisk(["import", try disk.store.file("more", disk.data), "--node", "c", "--persistent"])
        #expect(importRun.status != 0 && importRun.stderr.lowercased().contains("no space left on device"), "\(importRun.stderr)")
        #expect(!importRun.stderr.contains("SQLite"), "\(importRun.stderr)")
        let delete = try disk.darkdisk(["delete", "--node", "a"])
        #expect(delete.status == 0, "delete on a full disk: \(delete.stderr)")
        #expect(try disk.darkdisk(["export", "--node", "b"]).stdout == disk.data)
        #expect(try disk.darkdisk(["export", "--node", "a"]).status != 0, "a is gone")
        // Room again: the store works as before (and keeps its reserve for the next time).
        #expect(try disk.darkdisk(["import", try disk.store.file("small", Data("x".utf8)), "--node", "c"]).status == 0)
        #expect(try disk.darkdisk(["check", "--full"]).status == 0)
        #expect(FileManager.default.fileExists(atPath: disk.storePath + "/data/reserve"))
    }

    /// Overwriting a big file on a nearly full disk needs the room a local disk needs (the difference, not
    /// the whole new file: `cp` of 40 MB over 30 MB failed with 22 MB free), and an upload that has no room
    /// says so, in `sync` and in `status`, instead of trying again and again in silence.
    @Test func overwritingABigFileNeedsTheRoomOfTheDifference() async throws {
        let disk = try await StoreOnTmpfs()
        defer { withExtendedLifetime(disk) {} }
        let store = disk.store
        let (old, new) = (store.directory + "/old", store.directory + "/new")
        try await DriveWriteTests.sh("head -c 30M /dev/urandom > \(Shell.quote(old)); head -c 40M /dev/urandom > \(Shell.quote(new))")
        // (Not uploaded while the test runs: the old version stays here, persistent, as a change waiting.)
        let mount = try Mount(store, options: ["--write-back", "600"])
        let file = mount.path + "/files/f"
        try await DriveWriteTests.sh("cp \(Shell.quote(old)) \(Shell.quote(file))")
        // 22 MB left: ext4 takes the 40 MB over the 30 MB.
        let avail = Int(try await Shell.sh("df --output=avail -B1 \(Shell.quote(store.storePath)) | tail -1").output
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        try #require(avail > 23 << 20, "room before the filler: \(avail)")
        try await DriveWriteTests.sh("head -c \(avail - (22 << 20)) /dev/zero > \(Shell.quote(store.storePath + "/filler"))")
        let copy = try await Shell.sh("cp \(Shell.quote(new)) \(Shell.quote(file)) && cmp \(Shell.quote(new)) \(Shell.quote(file))")
        #expect(copy.status == 0, "40 MB over 30 MB with 22 MB free: \(copy.stderr)")
        // Its upload has no room (its cloud file needs 40 MB more): said, and kept in the queue's state.
        let sync = try await store.darkdisk(["sync"])
        #expect(sync.status != 0 && sync.stderr.contains("No space left on device"), "sync: \(sync.stderr)")
        let status = try await store.darkdisk(["status"])
        #expect(status.output.contains("No space left on device"), "status: \(status.output)")
        try await DriveWriteTests.sh("rm \(Shell.quote(store.storePath + "/filler")); cmp \(Shell.quote(new)) \(Shell.quote(file))")
        try await DriveWriteTests.sh("fusermount3 -u \(Shell.quote(mount.path))")
    }

    /// An upload to the store's own bucket folder (the embedded `file://` remote, on the same disk) needs
    /// the room of its cloud file once: the composed file is moved into the bucket, not copied (a 40 MB
    /// push needed 80 MB free).
    @Test func anUploadToABucketOnTheSameDiskNeedsItsRoomOnce() async throws {
        let disk = try await StoreOnTmpfs()
        defer { withExtendedLifetime(disk) {} }
        let store = disk.store
        let data = CLIStore.bytes(40 << 20, seed: 5)
        let input = try store.file("in", data)
        #expect(try await store.darkdisk(["import", input, "--node", "big", "--persistent"]).status == 0)
        func available() async throws -> Int {
            Int(try await Shell.sh("df --output=avail -B1 \(Shell.quote(store.storePath)) | tail -1").output
                .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
        let before = try await available()
        try #require(before > 50 << 20, "room before the filler: \(before)")
        try await DriveWriteTests.sh("head -c \(before - (48 << 20)) /dev/zero > \(Shell.quote(store.storePath + "/filler"))")
        let push = try await store.darkdisk(["push", "--node", "big"])
        #expect(push.status == 0, "a 40 MB push with 48 MB free: \(push.stderr)")
        let after = try await available()
        #expect(after > 6 << 20, "the cloud file took its room once: \(after) bytes left")
        // What landed is the node: read back from the bucket alone (into a pool that holds it).
        #expect(try await store.darkdisk(["config", "set", "pool.data.max_size", "\(64 << 20)"]).status == 0)
        #expect(try await store.darkdisk(["evict", "--node", "big"]).status == 0)
        #expect(try await store.darkdisk(["export", "--node", "big"]).stdout == data)
        #expect(try await store.darkdisk(["check", "--remote"]).status == 0)
    }

    @Test func readOnlyCommandsWorkOnAReadOnlyStore() async throws {
        let disk = try SmallDisk()
        let remount = try await Shell.run("/bin/mount", ["-o", "remount,ro", disk.mountpoint])
        try #require(remount.status == 0, "\(remount.stderr)")
        let status = try disk.darkdisk(["status"])
        #expect(status.status == 0 && status.output.contains("data "), "status: \(status.stderr)")
        let export = try disk.darkdisk(["export", "--node", "b"])
        #expect(export.status == 0 && export.stdout == disk.data, "export: \(export.stderr)")
        #expect(try disk.darkdisk(["check", "--full"]).status == 0)
        #expect(try disk.darkdisk(["config", "get", "pool.data.max_size"]).output == "26214400\n")
        for command in [["delete", "--node", "a"], ["config", "set", "pool.data.max_size", "1M"]] {
            expectOneLineFailure(try disk.darkdisk(command), mentioning: "read-only file system")
        }
    }
}
