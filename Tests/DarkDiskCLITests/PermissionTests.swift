import DarkDiskTestTraits
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The drive's permission checks and set-ID bits, judged against a local disk: each script runs in a folder
/// of the local disk and in `/files`, and the two outputs (exit statuses, modes, what was read) must agree.
/// A single-user mount checks the owner's mode bits in the daemon (the kernel's `default_permissions` would
/// ask a `GETATTR` of a folder before each walk through it after a change); `allow_other` mounts leave the
/// checks to the kernel. The daemon clears set-ID bits itself (`FUSE_HANDLE_KILLPRIV`).
@Suite(.processSlots) struct PermissionTests {
    static let asNobody = "setpriv --reuid=65534 --regid=65534 --clear-groups"

    /// Runs `script` (with `$D` the folder to work in) in a fresh local folder under `scratch` and in one
    /// under `drive`, as root or, with `asNobody`, as nobody (who then owns the local folder); returns both
    /// outputs.
    static func both(_ script: String, drive: String, scratch: String, asNobody: Bool = false) async throws -> (local: String, drive: String) {
        let local = scratch + "/local-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: local, withIntermediateDirectories: true)
        if asNobody { #expect(chown(local, 65534, 65534) == 0) }
        let place = drive + "/t-" + UUID().uuidString
        func run(in folder: String) async throws -> String {
            let prefix = asNobody ? Self.asNobody + " " : ""
            let made = try await Shell.sh("\(prefix)mkdir -p \(Shell.quote(folder))")
            #expect(made.status == 0, "\(made.stderr)")
            let run = try await Shell.sh("\(prefix)env D=\(Shell.quote(folder)) sh -c \(Shell.quote("cd \"$D\" || exit 99\n" + script))")
            #expect(run.status == 0, "the script fails in \(folder): \(run.stderr)")
            return run.output
        }
        return (try await run(in: local), try await run(in: place))
    }

    @Test func setIDBitsGoAsOnALocalDiskOnChownAndOnOthersWrites() async throws {
        let (store, mount, files) = try await DriveWriteTests.mounted(options: ["-o", "allow_other"])
        let script = """
            show() { stat -c '%n %a' "$@"; }
            echo a > f; chmod 4755 f; chown 0:0 f; show f
            echo b > g; chmod 2775 g; chown 0:0 g; show g
            echo c > h; chmod 2765 h; chown 0:0 h; show h
            echo d > k; chmod 4777 k; \(Self.asNobody) sh -c 'echo more >> k'; show k; cat k
            chmod 4777 k; echo root >> k; show k
            chmod 6777 k; \(Self.asNobody) truncate -s 1 k; show k
            chmod 2777 k; \(Self.asNobody) truncate -s 0 k; show k
            mkdir s; chmod 2775 s; chown 0:0 s; show s
            """
        let (local, drive) = try await Self.both(script, drive: files, scratch: store.directory)
        #expect(drive == local, "the drive:\n\(drive)\na local disk:\n\(local)\nthe daemon's log:\n\(mount.log.suffix(2000))")
        #expect(local.contains("f 755") && local.contains("k 777"), "the local disk clears them: \(local)")
        // The daemon clears them, not the kernel (which would ask a `GETATTR` before each `chown`).
        #expect(mount.log.contains("this daemon clears set-ID bits (FUSE_HANDLE_KILLPRIV"), "\(mount.log.suffix(2000))")
        #expect(mount.log.contains("permissions checked by the kernel"), "allow_other: \(mount.log.suffix(2000))")
    }

    /// On a mount others may enter, the ID views grant no more than the drive: `/nodes` and `/thumbs` are
    /// the owner's only, and a node's files there carry its mode. A file kept from `nobody` in `/files`
    /// (0600 in a 0700 folder) was readable as `/nodes/<id>/data` (always 0644 in 0755 folders).
    @Test func theIDViewsGrantNoMoreThanTheDrive() async throws {
        let (_, mount, files) = try await DriveWriteTests.mounted(options: ["-o", "allow_other"])
        let script = """
            cd \(Shell.quote(files))
            mkdir secret; echo 'for root only' > secret/f; chmod 600 secret/f; chmod 700 secret
            id=$(getfattr --only-values -n user.darkdisk.node secret/f)
            stat -c '%n %a' ../nodes ../thumbs "../nodes/$id/data" | sed "s/$id/ID/"
            \(Self.asNobody) cat secret/f; echo "files: $?"
            \(Self.asNobody) cat "../nodes/$id/data"; echo "nodes: $?"
            \(Self.asNobody) ls ../nodes; echo "list: $?"
            \(Self.asNobody) ls ../avatars > /dev/null; echo "avatars: $?"
            cat "../nodes/$id/data"
            """
        let run = try await Shell.sh(script + " 2>&1")
        let expected = """
            ../nodes 700
            ../thumbs 700
            ../nodes/ID/data 600
            """
        #expect(run.output.hasPrefix(expected), "\(run.output)\nthe daemon's log:\n\(mount.log.suffix(2000))")
        for denied in ["files: 1", "nodes: 1", "list: 2"] {
            #expect(run.output.contains(denied), "\(denied): \(run.output)")
        }
        #expect(run.output.contains("avatars: 0") && run.output.hasSuffix("for root only\n"), "\(run.output)")
        #expect(!run.output.contains("for root only\nnodes"), "nobody read it through /nodes: \(run.output)")
    }

    @Test func rootOnASingleUserMountReadsAndWritesAnyModeAndExecutesOnlyWithAnExecuteBit() async throws {
        let (store, mount, files) = try await DriveWriteTests.mounted()
        let script = """
            echo x > f; chmod 000 f; cat f; echo "read 000: $?"; echo y >> f; echo "append 000: $?"; cat f
            test -r f; echo "access r 000: $?"; test -w f; echo "access w 000: $?"; test -x f; echo "access x 000: $?"
            chmod 010 f; test -x f; echo "access x 010: $?"
            mkdir d; chmod 000 d; touch d/n; echo "create in 000: $?"; ls d; echo "list 000: $?"; test -x d; echo "access x dir 000: $?"
            (cd d); echo "cd 000: $?"; chmod 700 d
            """
        let (local, drive) = try await Self.both(script, drive: files, scratch: store.directory)
        #expect(drive == local, "the drive:\n\(drive)\na local disk:\n\(local)\nthe daemon's log:\n\(mount.log.suffix(2000))")
        #expect(mount.log.contains("permissions checked by this daemon"), "\(mount.log.suffix(2000))")
    }

    /// A user other than root mounts a store of their own: the daemon holds them to their mode bits. (After
    /// `chmod` of a folder, names the kernel looked up within the last second, the drive's cache time, stay
    /// reachable until it ends: the script waits that out where it took search permission away.)
    @Test func aSingleUserMountHoldsItsOwnerToTheModeBitsAsALocalDiskDoes() async throws {
        let store = try CLIStore()
        let home = store.directory + "/nobody"
        try FileManager.default.createDirectory(atPath: home + "/mnt", withIntermediateDirectories: true)
        for path in [home, home + "/mnt"] { #expect(chown(path, 65534, 65534) == 0) }
        let darkdisk = "\(Self.asNobody) env HOME=\(Shell.quote(home)) \(Shell.quote(Shell.darkdisk))"
        let storeOption = "--store \(Shell.quote(home + "/store"))"
        let made = try await Shell.sh("\(darkdisk) init \(storeOption)")
        #expect(made.status == 0, "\(made.stderr)")
        try await DevFuse.withOthers(open: true) {
            let mounted = try await Shell.sh("\(darkdisk) mount \(Shell.quote(home + "/mnt")) \(storeOption)")
            try #require(mounted.status == 0, "nobody mounts: \(mounted.stderr)")
            defer { _ = try? Shell.sh("\(darkdisk) unmount \(Shell.quote(home + "/mnt")) \(storeOption) || fusermount3 -uz \(Shell.quote(home + "/mnt"))") }
            let script = """
                mkdir d; echo hi > d/f
                chmod 000 d/f; cat d/f 2>/dev/null; echo "read 000: $?"; (echo x >> d/f) 2>/dev/null; echo "append 000: $?"
                chmod 400 d/f; cat d/f; echo "read 400: $?"; (echo x >> d/f) 2>/dev/null; echo "append 400: $?"
                truncate -s 0 d/f 2>/dev/null; echo "truncate 400: $?"
                test -r d/f; echo "access r 400: $?"; test -w d/f; echo "access w 400: $?"; test -x d/f; echo "access x 400: $?"
                setfattr -n user.a -v 1 d/f 2>/dev/null; echo "setfattr 400: $?"
                chmod 600 d/f; setfattr -n user.a -v 1 d/f; chmod 200 d/f; getfattr -n user.a d/f >/dev/null 2>&1; echo "getfattr 200: $?"
                chmod 600 d/f
                mkdir w; echo 1 > w/old; chmod 500 w
                touch w/new 2>/dev/null; echo "create in 500: $?"; rm -f w/old 2>/dev/null; echo "unlink in 500: $?"
                mv w/old w/renamed 2>/dev/null; echo "rename in 500: $?"; mkdir w/sub 2>/dev/null; echo "mkdir in 500: $?"
                ln -s x w/l 2>/dev/null; echo "symlink in 500: $?"; mv d/f w/ 2>/dev/null; echo "move into 500: $?"; chmod 700 w
                mkdir r; echo 1 > r/a; chmod 300 r; ls r >/dev/null 2>&1; echo "list 300: $?"; cat r/a; echo "read through 300: $?"; chmod 700 r
                mkdir s; echo 1 > s/a; chmod 600 s; sleep 1.5
                cat s/a 2>/dev/null; echo "read through 600: $?"; ls s; echo "list 600: $?"; (cd s) 2>/dev/null; echo "cd 600: $?"; chmod 700 s
                mkdir m1 m2 m1/sub; chmod 500 m1/sub; mv m1/sub m2/ 2>/dev/null; echo "move a 500 folder: $?"; chmod 700 m1/sub
                echo 2 > t; truncate -s 1 t; chmod 400 t; truncate -s 0 t 2>/dev/null; echo "truncate by name 400: $?"; wc -c < t
                cp /bin/true x; chmod 100 x; ./x; echo "execute 100: $?"; chmod 010 x; ./x 2>/dev/null; echo "execute 010: $?"
                chmod 600 x; ./x 2>/dev/null; echo "execute 600: $?"
                """
            let (local, drive) = try await Self.both(script, drive: home + "/mnt/files", scratch: home, asNobody: true)
            #expect(drive == local, "the drive:\n\(drive)\na local disk:\n\(local)")
            #expect(local.contains("read 000: 1") && local.contains("create in 500: 1"), "the local disk refuses: \(local)")
        }
    }
}
