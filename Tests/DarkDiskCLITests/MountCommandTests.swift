import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// `darkdisk mount` and `darkdisk unmount` at mount points that are not what they expect: unmount only
/// unmounts darkdisk (found through symbolic links and escaped names), mount does not stack a second mount,
/// and the help says what the commands accept.
@Suite(.processSlots) struct MountCommandTests {
    /// Whether `path` is a mount point, as util-linux `mountpoint` sees it (not darkdisk's reading of mountinfo).
    static func isMountPoint(_ path: String) throws -> Bool {
        try Shell.run("/usr/bin/mountpoint", ["-q", path]).status == 0
    }

    /// Unmounts everything stacked at `path` (lazily), whatever it is.
    static func unmountAll(_ path: String) {
        for _ in 0..<5 where (try? isMountPoint(path)) == true {
            _ = try? Shell.run("/bin/umount", ["-l", path])
        }
    }

    /// How many `darkdisk mount … --foreground` daemons name `mountpoint` on their command line.
    static func daemonCount(serving mountpoint: String) -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.filter { entry in
            guard let pid = pid_t(entry), MountDaemon.isAlive(pid),
                  let raw = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { return false }
            let arguments = raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            return arguments.first?.hasSuffix("darkdisk") == true && arguments.contains("mount")
                && arguments.contains(mountpoint) && arguments.contains("--foreground")
        }.count
    }

    /// A tmpfs whose path has a space and a tab (escaped as \040 and \011 in /proc/self/mountinfo): unmount
    /// refuses it instead of unmounting it, and mount refuses to go on top of it.
    @Test func unmountAndMountRefuseATmpfs() async throws {
        let store = try CLIStore()
        let path = store.directory + "/a tmp\tfs"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let tmpfs = try await Shell.run("/bin/mount", ["-t", "tmpfs", "none", path])
        try #require(tmpfs.status == 0, "mount -t tmpfs: \(tmpfs.stderr)")
        defer { Self.unmountAll(path); withExtendedLifetime(store) {} }

        await expectOneLineFailure(try store.darkdisk(["unmount", path]), mentioning: "is a tmpfs mount, not darkdisk")
        #expect(try Self.isMountPoint(path), "the tmpfs is still mounted")
        await expectOneLineFailure(try store.darkdisk(["mount", path]), mentioning: "is already a mount point (a tmpfs mount")
        #expect(Self.daemonCount(serving: path) == 0, "no daemon started")
        await #expect(try Shell.run("/usr/bin/findmnt", ["-n", "-o", "FSTYPE", "--mountpoint", path]).output == "tmpfs\n",
                "nothing on top of the tmpfs")
    }

    @Test func unmountOfAPathThatIsNotMountedSaysSo() async throws {
        let store = try CLIStore()
        await expectOneLineFailure(try store.darkdisk(["unmount", store.directory]), mentioning: "cannot unmount \(store.directory): it is not mounted")
        await expectOneLineFailure(try store.darkdisk(["unmount", store.directory + "/missing"]), mentioning: "it is not mounted")
    }

    /// A symbolic link to the mount point (in a folder with a space) mounts and unmounts.
    @Test func mountAndUnmountThroughASymbolicLink() async throws {
        let store = try CLIStore()
        let target = store.directory + "/my mount point"
        let link = store.directory + "/link"
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "my mount point")
        defer { Self.unmountAll(target); withExtendedLifetime(store) {} }

        let mount = try await store.darkdisk(["mount", link])
        try #require(mount.status == 0, "mount: \(mount.stderr)")
        #expect(try Self.isMountPoint(target))
        let daemon = try #require(MountDaemon.pid(serving: link), "the mount daemon in /proc")
        let unmount = try await store.darkdisk(["unmount", link])
        #expect(unmount.status == 0, "unmount: \(unmount.stderr)")
        #expect(try !Self.isMountPoint(target))
        await #expect(eventually(within: 15) { !MountDaemon.isAlive(daemon) }, "the daemon exits")
    }

    /// Mounting the same store twice on one directory is refused before a second daemon starts, in the
    /// background and in the foreground; one unmount then leaves nothing mounted.
    @Test func aSecondMountOnTheSameDirectoryIsRefused() async throws {
        let store = try CLIStore()
        let mount = try Mount(store)
        let daemon = try #require(MountDaemon.pid(serving: mount.path), "the mount daemon in /proc")

        await expectOneLineFailure(try store.darkdisk(["mount", mount.path]),
                             mentioning: "\(mount.path) is already a mount point (darkdisk unmount \(mount.path) first)")
        let foreground = try await Shell.run("/usr/bin/timeout", ["-s", "KILL", "30", Shell.darkdisk, "mount", mount.path, "--foreground",
                                                            "--store", store.storePath])
        expectOneLineFailure(foreground, mentioning: "is already a mount point")
        #expect(Self.daemonCount(serving: mount.path) == 1, "one daemon")

        await #expect(try store.darkdisk(["unmount", mount.path]).status == 0)
        #expect(try !Self.isMountPoint(mount.path), "one unmount leaves nothing mounted")
        await #expect(eventually(within: 15) { !MountDaemon.isAlive(daemon) }, "the daemon exits")
        Self.unmountAll(mount.path)
    }

    /// `mount --help` describes the mount point as the command treats it and lists every allowed -o option.
    @Test func mountHelpTellsWhatItAccepts() async throws {
        let help = try await Shell.run(Shell.darkdisk, ["mount", "--help"])
        #expect(help.status == 0)
        let text = help.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(!text.contains("empty directory"), "\(text)")
        #expect(text.contains("A directory (created if missing; its parent must exist). Files already in it are hidden while mounted."), "\(text)")
        for option in ["allow_other", "allow_root", "auto_unmount", "noatime", "nodev", "nosuid", "noexec",
                       "dirsync", "sync", "async", "max_read=N"] {
            #expect(text.contains(" \(option),") || text.contains(" \(option) "), "option \(option): \(text)")
        }
    }

    /// What the help says holds: a missing mount point is made, and files already in one are hidden while
    /// mounted and back afterwards; -o dirsync,sync is accepted.
    @Test func aMissingMountPointIsMadeAndAFullOneIsCovered() async throws {
        let store = try CLIStore()
        let fresh = store.directory + "/fresh"
        let full = store.directory + "/full"
        try FileManager.default.createDirectory(atPath: full, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: full + "/mine", contents: Data("mine\n".utf8))
        defer { Self.unmountAll(fresh); Self.unmountAll(full); withExtendedLifetime(store) {} }

        let first = try await store.darkdisk(["mount", fresh, "-o", "dirsync,sync"])
        try #require(first.status == 0, "mount at a missing directory: \(first.stderr)")
        #expect(try Self.isMountPoint(fresh))
        await #expect(try store.darkdisk(["unmount", fresh]).status == 0)
        let second = try await store.darkdisk(["mount", full])
        try #require(second.status == 0, "mount on a directory with a file: \(second.stderr)")
        #expect(!FileManager.default.fileExists(atPath: full + "/mine"), "hidden while mounted")
        await #expect(try store.darkdisk(["unmount", full]).status == 0)
        #expect(FileManager.default.contents(atPath: full + "/mine") == Data("mine\n".utf8), "back after the unmount")
    }

    @Test func remoteTimeoutBoundsAreStatedAsTheyAre() async throws {
        let store = try CLIStore()
        for seconds in ["0", "86401"] {
            await expectOneLineFailure(try store.darkdisk(["mount", store.directory + "/mnt", "--remote-timeout", seconds]),
                                 mentioning: "--remote-timeout must be more than 0 and at most 86400 seconds")
        }
        #expect(try !Self.isMountPoint(store.directory + "/mnt"))
    }
}
