import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// At the command line: `push` queues and waits (or not, with `--no-wait`), `push --node`
/// without FILE uploads what the store holds, `sync` drains the queue, `status` shows it, and a mount's
/// daemon drains it in the background and says where each file stands in `user.darkdisk.sync`.
@Suite(.processSlots) struct QueueCommandTests {
    @Test func pushQueuesSyncDrainsAndStatusShowsTheQueue() async throws {
        let remote = try RemoteBucket()
        let store = remote.a
        let pass = ["--passphrase-file", remote.passphrase]
        let data = CLIStore.bytes(400_000, seed: 41)

        let queued = try await store.darkdisk(["push", try store.file("later", data), "--node", "later", "--name", "later.bin", "--no-wait"] + pass)
        #expect(queued.status == 0, "\(queued.stderr)")
        #expect(!FileManager.default.fileExists(atPath: try remote.recordPath("later")))
        let status = try await store.darkdisk(["status"] + pass)
        #expect(status.output.contains("upload queue: 1 pending ("), "\(status.output)")
        #expect(status.output.contains("'later.bin' (node later): pending"), "\(status.output)")

        let sync = try await store.darkdisk(["sync"] + pass)
        #expect(sync.status == 0, "\(sync.stderr)")
        #expect(sync.output.contains("uploaded 1 changes"), "\(sync.output)")
        #expect(FileManager.default.fileExists(atPath: try remote.recordPath("later")))
        #expect(!(try await store.darkdisk(["status"] + pass)).output.contains("upload queue"))

        // B reads what A uploaded.
        try remote.join("file://" + remote.bucket)
        let out = remote.b.directory + "/later.out"
        #expect(try remote.darkdiskB(["export", "--node", "later", "--output", out]).status == 0)
        #expect(FileManager.default.contents(atPath: out) == data)

        // Without FILE: what the store holds goes up (here, an imported file); a node with nothing stored is refused.
        let imported = CLIStore.bytes(5_000, seed: 42)
        #expect(try await store.darkdisk(["import", try store.file("imp", imported), "--node", "imported"] + pass).status == 0)
        let push = try await store.darkdisk(["push", "--node", "imported", "--name", "imported.bin"] + pass)
        #expect(push.status == 0, "\(push.stderr)")
        #expect(FileManager.default.fileExists(atPath: try remote.recordPath("imported")))
        expectOneLineFailure(try await store.darkdisk(["push", "--node", "nothing"] + pass), mentioning: "no data stored locally")
        // A thumbnail or metadata without FILE is refused before anything is queued.
        let thumbnail = try store.file("thumb", Data("thumb".utf8))
        expectOneLineFailure(try await store.darkdisk(["push", "--node", "imported", "--thumbnail", thumbnail] + pass), mentioning: "go with FILE")
        #expect(!(try await store.darkdisk(["status"] + pass)).output.contains("upload queue"))
    }

    /// A bucket where A pushed `seed`, joined by B, whose daemon polls never (it uploads, though).
    static func mountedB() throws -> (RemoteBucket, Mount) {
        let remote = try RemoteBucket()
        try remote.push("seed", Data("seed".utf8))
        try remote.join("file://" + remote.bucket)
        return (remote, try remote.mountB(["--poll-interval", "0"]))
    }

    /// `user.darkdisk.sync` of node `id`'s data through the mount ("" if it cannot be read).
    static func syncState(_ id: String, on mount: Mount) async -> String {
        (try? await Shell.sh("getfattr --only-values -n user.darkdisk.sync \(Shell.quote(mount.path + "/nodes/\(id)/data"))").output) ?? ""
    }

    /// Waits up to `seconds` for node `id` to say `expected`; the last state read.
    static func wait(_ id: String, on mount: Mount, for expected: String, seconds: Int) async -> String {
        var last = ""
        for _ in 0..<(seconds * 10) {
            last = await syncState(id, on: mount)
            if last == expected { break }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return last
    }

    @Test func aMountsDaemonUploadsTheQueueInTheBackground() async throws {
        let (remote, mount) = try Self.mountedB()
        defer { withExtendedLifetime(mount) {} }
        let data = CLIStore.bytes(300_000, seed: 43)
        let push = try await remote.b.darkdisk(["push", try remote.b.file("bg", data), "--node", "bg", "--no-wait", "--passphrase-file", remote.passphrase])
        #expect(push.status == 0, "\(push.stderr)")
        // The daemon notices within seconds, uploads, and pulls; the file then says it is synced.
        #expect(await Self.wait("bg", on: mount, for: "synced", seconds: 10) == "synced")
        #expect(FileManager.default.fileExists(atPath: try remote.recordPath("bg")))
        #expect(await Self.syncState("seed", on: mount) == "synced")
    }

    /// With `--write-back`, a drive file's change waits until it has rested that long, and a change made
    /// meanwhile makes it wait again: it uploads once, after the writes.
    @Test func theDaemonUploadsAChangeOnceItHasRested() async throws {
        let remote = try RemoteBucket()
        try remote.push("seed", Data("seed".utf8))
        try remote.join("file://" + remote.bucket)
        // 10 s of rest, the second change 5 s after the first and the second look 2 s past the first change's
        // rest (the uploader looks every second): seconds of slack either way for a loaded machine.
        let mount = try remote.mountB(["--poll-interval", "0", "--write-back", "10"])
        defer { withExtendedLifetime(mount) {} }
        let file = mount.path + "/files/rested.txt"
        func state() async -> String {
            (try? await Shell.sh("getfattr --only-values -n user.darkdisk.sync \(Shell.quote(file))").output) ?? ""
        }
        let first = Date()
        try await DriveWriteTests.sh("echo one > \(Shell.quote(file))")
        let id = try await DriveWriteTests.sh("getfattr --only-values -n user.darkdisk.node \(Shell.quote(file))")
        try await Task.sleep(for: .seconds(5))
        #expect(await state() == "pending", "5 s after its change, within the 10 s it must rest")
        try await DriveWriteTests.sh("echo two >> \(Shell.quote(file))")
        try await Task.sleep(for: .seconds(max(0, 12 - Date().timeIntervalSince(first))))
        #expect(await state() == "pending", "changed again: it rests anew")
        #expect(!FileManager.default.fileExists(atPath: try remote.recordPath(id)))
        var last = ""
        for _ in 0..<150 {
            last = await state()
            if last == "synced" { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(last == "synced", "\(mount.log)")
        #expect(FileManager.default.fileExists(atPath: try remote.recordPath(id)))
    }

    /// `user.darkdisk.sync` through a mount says `failed` while uploads fail (the bucket's `nodes` folder
    /// replaced by a file), `synced` once the daemon's retry lands, and `conflict` on the copy a conflicting
    /// push made.
    @Test func theSyncAttributeSaysFailedThenSyncedAndConflict() async throws {
        let (remote, mount) = try Self.mountedB()
        defer { withExtendedLifetime(mount) {} }
        func state(_ id: String) async -> String { await Self.syncState(id, on: mount) }
        func wait(_ id: String, for expected: String, seconds: Int) async -> String {
            await Self.wait(id, on: mount, for: expected, seconds: seconds)
        }

        let nodes = remote.bucket + "/nodes"
        try FileManager.default.moveItem(atPath: nodes, toPath: nodes + ".aside")
        _ = FileManager.default.createFile(atPath: nodes, contents: Data("in the way".utf8))
        let push = try await remote.b.darkdisk(["push", try remote.b.file("bg", Data("queued".utf8)), "--node", "bg", "--no-wait",
                                                "--passphrase-file", remote.passphrase])
        #expect(push.status == 0, "\(push.stderr)")
        #expect(await wait("bg", for: "failed", seconds: 20) == "failed")
        let status = try remote.darkdiskB(["status"])
        #expect(status.output.contains("node bg: failed"), "\(status.output)")
        try FileManager.default.removeItem(atPath: nodes)
        try FileManager.default.moveItem(atPath: nodes + ".aside", toPath: nodes)
        // The daemon's backoff is at most a minute.
        #expect(await wait("bg", for: "synced", seconds: 70) == "synced")

        // A pushes a new `seed` after B pulled; B's push of its own `seed` makes a conflict copy.
        try remote.push("seed", Data("A's seed".utf8))
        let conflicting = try await remote.b.darkdisk(["push", try remote.b.file("mine", Data("B's seed".utf8)), "--node", "seed",
                                                       "--passphrase-file", remote.passphrase])
        #expect(conflicting.status == 3, "\(conflicting.output) \(conflicting.stderr)")
        let listed = try await Shell.sh("ls \(Shell.quote(mount.path + "/nodes"))").output.split(separator: "\n").map(String.init)
        let copies = listed.filter { !["seed", "bg"].contains($0) }
        #expect(copies.count == 1, "\(listed)")
        if let copy = copies.first {
            #expect(await wait(copy, for: "conflict", seconds: 10) == "conflict")
        }
        #expect(await state("seed") == "synced")
    }

    /// Once uploaded, pushed content moves from persistent storage to the cache pool by a hard link (the
    /// same inode), not a copy of the whole file: the uploader no longer holds the file when the hooks run.
    @Test func anUploadedFileMovesToTheCachePoolWithoutACopy() async throws {
        let remote = try RemoteBucket()
        let store = remote.a
        let pass = ["--passphrase-file", remote.passphrase]
        let queued = try await store.darkdisk(["push", try store.file("big", CLIStore.bytes(3_000_000, seed: 44)), "--node", "big", "--no-wait"] + pass)
        #expect(queued.status == 0, "\(queued.stderr)")
        func inodes(_ folder: String) throws -> Set<String> {
            Set(try Shell.sh("find \(Shell.quote(store.storePath + "/" + folder)) -type f -name '*.ddf' -size +1000k -printf '%i\\n'")
                .output.split(separator: "\n").map(String.init))
        }
        let persistent = try inodes("data/files")
        #expect(persistent.count == 1)
        #expect(try await store.darkdisk(["sync"] + pass).status == 0)
        #expect(try inodes("data/files").isEmpty, "no longer persistent")
        #expect(try inodes("cache/files") == persistent, "the same inode: linked, not copied")
    }
}
