import DarkDiskFS
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A proper Linux install: `Scripts/package` makes a .deb that apt installs and purges
/// here; `mount -t darkdisk`, an fstab line (`mount -T`) and the helper without `HOME` mount a store; a unit's
/// `ExecStart` tells systemd `READY=1` only once the mount serves and `STOPPING=1` on SIGTERM; the
/// completions parse and the man pages render; `--version` is the package's.
@Suite(.processSlots, .serialized) struct PackageTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    /// The package `Scripts/test` built (`Scripts/package --debug`) before the tests: `swift test` holds the
    /// build folder, so a test cannot build it.
    static let deb = ProcessInfo.processInfo.environment["DARKDISK_TEST_DEB"]

    @Test(.enabled(if: deb != nil, "Scripts/test builds the package first (DARKDISK_TEST_DEB)"))
    func theDebianPackageInstallsMountsAndPurges() async throws {
        let store = try CLIStore()
        let deb = try #require(Self.deb)
        let version = try await Shell.run(Shell.darkdisk, ["--version"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(deb.hasSuffix("/darkdisk_\(version.split(separator: " ").last ?? "")_amd64.deb"), "\(deb) for \(version)")
        let control = try await Shell.sh("dpkg-deb -f \(Shell.quote(deb)) Version Depends Recommends")
        #expect(control.output.contains("Version: \(version.split(separator: " ").last ?? "")"), "\(control.output)")
        for dependency in ["fuse3", "libfuse3-3", "libssl3", "libsqlite3-0"] {
            #expect(control.output.contains(dependency), "Depends lacks \(dependency): \(control.output)")
        }
        #expect(control.output.contains("Recommends: libvips42"))

        let install = try Shell.sh("DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=240 install -y -q \(Shell.quote(deb))", timeout: 300)
        #expect(install.status == 0, "\(install.output.suffix(2000))\(install.stderr.suffix(2000))")
        defer { _ = try? Shell.sh("DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=240 purge -y -q darkdisk", timeout: 300) }
        #expect(try await Shell.sh("/usr/bin/darkdisk --version").output == version + "\n")
        #expect(try await Shell.sh("bash -n /usr/share/bash-completion/completions/darkdisk").status == 0)
        #expect(FileManager.default.fileExists(atPath: "/usr/share/zsh/vendor-completions/_darkdisk"))
        #expect(FileManager.default.fileExists(atPath: "/usr/share/fish/vendor_completions.d/darkdisk.fish"))
        #expect(FileManager.default.fileExists(atPath: "/usr/lib/systemd/system/darkdisk@.service"))
        #expect(FileManager.default.fileExists(atPath: "/usr/lib/systemd/user/darkdisk.service"))
        let pages = try FileManager.default.contentsOfDirectory(atPath: "/usr/share/man/man1").filter { $0.hasPrefix("darkdisk") }
        for command in ["darkdisk", "darkdisk.mount", "darkdisk.pin", "darkdisk.evict", "darkdisk.status"] {
            #expect(pages.contains(command + ".1.gz"), "no man page for \(command): \(pages.sorted())")
        }
        for page in pages {
            let rendered = try await Shell.sh("MANWIDTH=80 man -l /usr/share/man/man1/\(page) 2>&1 >/dev/null; MANWIDTH=80 man -l /usr/share/man/man1/\(page) | head -3")
            #expect(rendered.status == 0 && !rendered.output.contains("warning") && !rendered.output.isEmpty, "man -l \(page): \(rendered.output)")
        }

        // mount -t darkdisk, with fstab's own options; then an fstab line (in a temporary fstab); then the
        // helper with an empty environment (no HOME, as a unit has).
        try await store.darkdisk(["import", "-", "--node", "hello"], stdin: Data("hello from the package".utf8))
        let mountpoint = store.directory + "/mnt"
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        let options = "noauto,nofail,_netdev,x-systemd.automount,poll_interval=0,write_back=0"
        let ways = [
            "mount -t darkdisk \(Shell.quote(store.storePath)) \(Shell.quote(mountpoint)) -o \(options)",
            "printf '%s %s darkdisk \(options) 0 0\\n' \(Shell.quote(store.storePath)) \(Shell.quote(mountpoint)) > \(Shell.quote(store.directory + "/fstab")) && mount -T \(Shell.quote(store.directory + "/fstab")) \(Shell.quote(mountpoint))",
            "env -i /usr/sbin/mount.darkdisk \(Shell.quote(store.storePath)) \(Shell.quote(mountpoint)) -o \(options)",
        ]
        for way in ways {
            let mounted = try Shell.sh(way, timeout: 60)
            #expect(mounted.status == 0, "\(way): \(mounted.stderr)")
            #expect(FileManager.default.contents(atPath: mountpoint + "/nodes/hello/data") == Data("hello from the package".utf8), "\(way)")
            #expect(try Shell.sh("/usr/bin/darkdisk unmount \(Shell.quote(mountpoint))", timeout: 60).status == 0)
        }
        try await automountedStoreServes(store, at: mountpoint)
        let unknown = try await Shell.sh("mount -t darkdisk \(Shell.quote(store.storePath)) \(Shell.quote(mountpoint)) -o colour=blue")
        #expect(unknown.status != 0 && unknown.stderr.contains("unsupported mount option 'colour=blue'"), "\(unknown.stderr)")

        let purge = try Shell.sh("DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=240 purge -y -q darkdisk", timeout: 300)
        #expect(purge.status == 0, "\(purge.stderr)")
        for path in ["/usr/bin/darkdisk", "/usr/sbin/mount.darkdisk", "/usr/lib/systemd/system/darkdisk@.service", "/usr/share/man/man1/darkdisk.1.gz"] {
            #expect(!FileManager.default.fileExists(atPath: path), "\(path) outlived the purge")
        }
    }

    /// Over an automount point, as `x-systemd.automount` makes one: Debian's automounter puts the kernel's
    /// autofs trigger there (what systemd's automount units use too), and the first look into it has the
    /// automounter run `mount -t darkdisk` over the trigger while the looking process waits. Only the
    /// automounter's own process group may look at the mount point meanwhile, so a daemon that left it too
    /// early waits for itself for ever.
    private func automountedStoreServes(_ store: CLIStore, at mountpoint: String) async throws {
        let master = store.directory + "/auto.master", map = store.directory + "/auto.darkdisk"
        try "/- \(map)\n".write(toFile: master, atomically: true, encoding: .utf8)
        try "\(mountpoint) -fstype=darkdisk,poll_interval=0,write_back=0 :\(store.storePath)\n".write(toFile: map, atomically: true, encoding: .utf8)
        let automounter = try Background("exec automount --foreground --timeout 0 \(Shell.quote(master))", in: store.directory)
        defer { kill(-automounter.pid, SIGKILL) }
        let trigger = { MountTable.top(at: mountpoint)?.fileSystemType }
        #expect(await eventually(within: 30) { trigger() == "autofs" }, "no autofs trigger: \(automounter.stderr)")
        // (SIGKILL: a process waiting on an automount ignores gentler signals.)
        let read = try await Shell.sh("timeout -s KILL 60 cat \(Shell.quote(mountpoint + "/nodes/hello/data"))")
        #expect(read.output == "hello from the package", "the automounted store did not serve (\(read.status)): \(automounter.stderr.suffix(1500))")
        #expect(trigger() == "fuse.darkdisk", "the store is mounted over the trigger")
        #expect(try Shell.sh("/usr/bin/darkdisk unmount \(Shell.quote(mountpoint))", timeout: 60).status == 0)
        #expect(trigger() == "autofs", "the trigger stays for the next look")
        kill(-automounter.pid, SIGTERM)
        #expect(await automounter.wait(seconds: 30) == 0, "\(automounter.stderr.suffix(1500))")
        #expect(trigger() == nil, "the automounter took its trigger away")
    }

    /// A unit's `ExecStart` (Type=notify): READY=1 only once the mount serves, STOPPING=1 on SIGTERM, and a
    /// clean exit.
    @Test func theMountTellsSystemdWhenItServesAndWhenItStops() async throws {
        let store = try CLIStore()
        try await store.darkdisk(["import", "-", "--node", "hello"], stdin: Data("served".utf8))
        let socket = store.directory + "/notify.sock", log = store.directory + "/notify.log", mountpoint = store.directory + "/mnt"
        let listener = try Background("python3 \(Shell.quote(Self.root + "/Tests/Tools/notify-listen.py")) \(Shell.quote(socket)) \(Shell.quote(log))", in: store.directory)
        defer { kill(-listener.pid, SIGKILL) }
        #expect(await eventually(within: 10) { FileManager.default.fileExists(atPath: socket) })
        // Its standard error stands in for journald's stream (JOURNAL_STREAM names the file's device and inode).
        let errors = store.directory + "/daemon.err"
        #expect(FileManager.default.createFile(atPath: errors, contents: nil))
        let daemon = try Background("JOURNAL_STREAM=$(stat -c %d:%i \(Shell.quote(errors))) NOTIFY_SOCKET=\(Shell.quote(socket)) exec \(Shell.quote(Shell.darkdisk)) mount --foreground --store \(Shell.quote(store.storePath)) \(Shell.quote(mountpoint)) --poll-interval 0 2>> \(Shell.quote(errors))", in: store.directory)
        func messages() -> [String] { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
        #expect(await eventually(within: 30) { messages().contains { $0.contains("READY=1") } }, "\(messages())")
        // By the time READY=1 is sent, the mount serves.
        #expect(Mount.isMounted(mountpoint))
        #expect(FileManager.default.contents(atPath: mountpoint + "/nodes/hello/data") == Data("served".utf8))
        #expect(messages().filter { $0.contains("READY=1") }.count == 1)
        kill(-daemon.pid, SIGTERM)
        #expect(await daemon.wait(seconds: 30) == 0, "\((try? String(contentsOfFile: store.directory + "/daemon.err", encoding: .utf8)) ?? "")")
        #expect(messages().contains { $0.contains("STOPPING=1") }, "\(messages())")
        #expect(!Mount.isMounted(mountpoint))
        // Every log line carries its journald priority: <6> info ("mounted ..."), and so on.
        let lines = try String(contentsOfFile: errors, encoding: .utf8).split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("<6>") && $0.contains("mounted") }, "\(lines)")
        #expect(lines.allSatisfy { $0.first == "<" && $0.dropFirst(2).first == ">" }, "\(lines)")
    }

    /// SIGTERM (systemd's stop): a change still resting in the queue is uploaded before the daemon exits, and
    /// with `--stop-timeout 0` it stays queued for the next mount.
    @Test func aStoppedMountUploadsWhatIsQueuedFirst() async throws {
        for stopTimeout in ["20", "0"] {
            let store = try CLIStore()
            let mountpoint = store.directory + "/mnt"
            let daemon = try Background("exec \(Shell.quote(Shell.darkdisk)) mount --foreground --store \(Shell.quote(store.storePath)) \(Shell.quote(mountpoint)) --write-back 600 --stop-timeout \(stopTimeout) 2> \(Shell.quote(store.directory + "/daemon.err"))", in: store.directory)
            #expect(await eventually(within: 30) { Mount.isMounted(mountpoint) })
            try Data("resting".utf8).write(to: URL(fileURLWithPath: mountpoint + "/files/note.txt"))
            #expect(try await store.darkdisk(["status"]).output.contains("upload queue: 1 pending"))
            kill(-daemon.pid, SIGTERM)
            let log = { (try? String(contentsOfFile: store.directory + "/daemon.err", encoding: .utf8)) ?? "" }
            #expect(await daemon.wait(seconds: 60) == 0, "\(log())")
            let status = try await store.darkdisk(["status"]).output
            if stopTimeout == "0" {
                #expect(status.contains("upload queue: 1 pending"), "left queued: \(status)")
            } else {
                #expect(!status.contains("upload queue"), "uploaded before stopping: \(status)\n\(log())")
                #expect(log().contains("uploading 1 queued change before stopping"), "\(log())")
            }
        }
    }
}
