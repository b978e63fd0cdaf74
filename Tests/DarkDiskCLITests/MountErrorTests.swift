import DarkDiskTestTraits
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What `darkdisk mount` says when it cannot mount, options that exclude each
/// other, and a daemon that leaves its caller's working directory alone.
@Suite(.processSlots) struct MountErrorTests {
    /// A user who cannot open /dev/fuse used to read "see the line above" with no line above (libfuse's
    /// reason went to the daemon's log). The one line now carries libfuse's reason.
    @Test func aUserWhoCannotOpenDevFuseIsToldWhy() async throws {
        let store = try CLIStore()
        let home = store.directory + "/nobody"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        #expect(chown(home, 65534, 65534) == 0)
        func asNobody(_ arguments: [String]) throws -> Run {
            try Shell.run("/usr/bin/timeout", ["-s", "KILL", "60", "/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                               "/usr/bin/env", "HOME=" + home, Shell.darkdisk] + arguments + ["--store", home + "/store"])
        }
        #expect(try asNobody(["init"]).status == 0)
        // Others cannot open /dev/fuse here (as on Debian 12 before the fuse3 udev rule made it 0666).
        try await DevFuse.withOthers(open: false) {
            for foreground in [false, true] {
                let run = try asNobody(["mount", home + "/mnt"] + (foreground ? ["--foreground"] : []))
                #expect(run.status != 0 && !Mount.isMounted(home + "/mnt"))
                #expect(run.stderrLines.last?.hasPrefix("darkdisk: cannot mount at ") == true, "\(run.stderr)")
                #expect(run.stderrLines.last?.contains("/dev/fuse: Permission denied") == true, "the reason is in the line: \(run.stderr)")
                #expect(!run.stderr.contains("line above"), "\(run.stderr)")
                if !foreground { expectOneLineFailure(run, mentioning: "failed to open /dev/fuse: Permission denied") }
            }
        }
    }

    @Test func allowOtherAndAllowRootTogetherAreRefusedInOneLine() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["init"]).status == 0)
        for options in [["-o", "allow_other,allow_root"], ["-o", "allow_root", "-o", "allow_other"]] {
            let run = try await store.darkdisk(["mount", store.directory + "/mnt"] + options)
            expectOneLineFailure(run, mentioning: "allow_other and allow_root exclude each other")
            #expect(!Mount.isMounted(store.directory + "/mnt"))
        }
    }

    /// The daemon used to keep the directory it was started from as its working directory, so that
    /// directory (or the file system it is on) stayed busy: `umount` of a USB stick failed while mounted.
    @Test func theDaemonDoesNotKeepTheCallersDirectoryBusy() async throws {
        let store = try CLIStore()
        let here = store.directory + "/here"
        try FileManager.default.createDirectory(atPath: here, withIntermediateDirectories: true)
        let run = try await Shell.sh("cd \(Shell.quote(here)) && \(Shell.quote(Shell.darkdisk)) mount mnt --store ../store")
        #expect(run.status == 0, "a relative mount point and store: \(run.stderr)")
        let mountpoint = here + "/mnt"
        defer { if Mount.isMounted(mountpoint) { _ = try? Shell.run("/bin/fusermount3", ["-u", "-z", mountpoint]) } }
        #expect(Mount.isMounted(mountpoint))
        // Its command line names the mount point as given: "mnt".
        let daemon = try #require(MountDaemon.pid(serving: "mnt"))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(daemon)/cwd") == "/")
        await #expect(try Shell.sh("ls \(Shell.quote(mountpoint))").output == "avatars\nfiles\nnodes\nthumbs\n")
        await #expect(try store.darkdisk(["unmount", mountpoint]).status == 0)
    }
}
