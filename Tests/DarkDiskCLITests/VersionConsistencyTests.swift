import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// A node replaced while it is being read. An open handle keeps reading the version it
/// opened, to its end; an open made after the replacement sees only the new version. Both used to mix
/// (the kernel's page cache was shared by handles serving different versions): the old reader got
/// `AAAAABB????BB??BBBBB` and a `cat` after the import `BBBBBAABBBBBBBBBBBBB`, with exit 0.
@Suite(.processSlots) struct VersionConsistencyTests {
    /// 20 MiB of one letter: every MiB read back says which version it came from.
    static let mib = 1 << 20
    static func version(_ letter: Character) -> Data { Data(repeating: letter.asciiValue!, count: 20 * mib) }

    /// Reads `path` from one descriptor 1 MiB every 0.1 s in a thread while the main thread runs the command
    /// that replaces the node and then `cat`s the path; prints what each MiB of both reads held.
    static let script = """
    import os, subprocess, sys, threading, time
    path, command = sys.argv[1], sys.argv[2:]
    def letters(data):
        out = ""
        for i in range(0, len(data), 1 << 20):
            block = data[i:i + (1 << 20)]
            out += chr(block[0]) if block and block.count(block[0:1]) == len(block) else "?"
        return out
    fd = os.open(path, os.O_RDONLY)
    old = bytearray()
    def reader():
        while True:
            block = os.read(fd, 1 << 20)
            if not block:
                return
            old.extend(block)
            time.sleep(0.1)
    thread = threading.Thread(target=reader)
    thread.start()
    time.sleep(0.35)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    new = subprocess.run(["cat", path], check=True, stdout=subprocess.PIPE).stdout
    thread.join()
    print(letters(old) + " " + letters(new))
    """

    @Test func aLocalReimportWhileReading() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["import", try store.file("a", Self.version("A")), "--node", "n", "--persistent"]).status == 0)
        let b = try store.file("b", Self.version("B"))
        let mount = try Mount(store)
        for round in 0..<2 {
            // Round 2 replaces B with B again (a new version of the same bytes), then A: back and forth.
            let (next, letter): (String, Character) = round == 0 ? (b, "B") : (try store.file("a2", Self.version("A")), "A")
            let previous: Character = round == 0 ? "A" : "B"
            let run = try await Shell.run("/usr/bin/python3", ["-c", Self.script, mount.path + "/nodes/n/data",
                                                         Shell.darkdisk, "import", next, "--node", "n", "--persistent", "--store", store.storePath])
            #expect(run.status == 0, "\(run.stderr)")
            let expected = String(repeating: previous, count: 20) + " " + String(repeating: letter, count: 20)
            #expect(run.output == expected + "\n", "old handle, then a cat after the import (round \(round))")
        }
        await #expect(try Shell.sh("cat \(Shell.quote(mount.path + "/nodes/n/data")) | head -c 1").output == "A")
    }

    /// The same through the cloud: store B reads a node (downloaded on demand) while A pushes a new version
    /// and B pulls it; the open handle keeps to the version it began with, the next `cat` reads the new one.
    @Test func aPulledChangeWhileReading() async throws {
        let remote = try RemoteBucket()
        try remote.push("n", Self.version("A"))
        try remote.join("file://" + remote.bucket)
        try RemoteBucket.check(try remote.darkdiskB(["config", "set", "pool.data.max_size", "256M"]), "config set")
        let b = try remote.a.file("b", Self.version("B"))
        let mount = try remote.mountB()
        let path = mount.path + "/nodes/n/data"
        // Once B holds the version its reader opened (the remote then no longer has it), A pushes and B pulls.
        let change = """
        until [ "$(getfattr --only-values -n user.darkdisk.local \(Shell.quote(path)))" = full ]; do sleep 0.1; done
        \(Shell.quote(Shell.darkdisk)) push \(Shell.quote(b)) --node n --store \(Shell.quote(remote.a.storePath)) --passphrase-file \(Shell.quote(remote.passphrase))
        \(Shell.quote(Shell.darkdisk)) pull --store \(Shell.quote(remote.b.storePath)) --passphrase-file \(Shell.quote(remote.passphrase))
        """
        let run = try await Shell.run("/usr/bin/python3", ["-c", Self.script, path, "/bin/sh", "-c", change])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.output == String(repeating: "A", count: 20) + " " + String(repeating: "B", count: 20) + "\n")
    }
}
