import DarkDiskStore
import DarkDiskTestTraits
import Foundation
import Testing

/// `/files` shows the outline as a tree of folders, files and symbolic links by name, with
/// the sizes, modes and times the records give, before anything is downloaded; two nodes with one name in
/// one folder both show, the later with a stable suffix; `user.darkdisk.node` gives an entry's node.
@Suite(.processSlots) struct DriveViewTests {
    /// A pushes a node named `name` in folder `parent` with `attributes`, through the CLI (the attributes
    /// set in A's index first, as the drive will set them).
    static func push(_ setup: RemoteBucket, _ id: String, name: String, parent: String?, data: Data, attributes: NodeAttributes) throws {
        var arguments = ["push", try setup.a.file("push-" + id, data), "--node", id, "--name", name, "--passphrase-file", setup.passphrase]
        if let parent { arguments += ["--parent", parent] }
        try RemoteBucket.check(try setup.a.darkdisk(arguments), "push \(id)")
        let manager = try DiskManager(location: StoreLocation(directory: setup.a.storePath), passphrase: Array("mount tests".utf8))
        #expect(try manager.outline.setAttributes(attributes, of: NodeID(id)))
        try RemoteBucket.check(try setup.a.darkdisk(["push", "--node", id, "--name", name] + (parent.map { ["--parent", $0] } ?? [])
                                                    + ["--passphrase-file", setup.passphrase]), "push \(id) again")
    }

    @Test func theOutlineIsATreeOfNamesWithModesTimesAndLinks() async throws {
        let setup = try RemoteBucket()
        let report = CLIStore.bytes(300_000, seed: 91)
        try Self.push(setup, "docs", name: "Documents", parent: nil, data: Data(),
                      attributes: NodeAttributes(kind: .folder, mode: 0o750, modifiedSeconds: 1_600_000_000))
        try Self.push(setup, "r1", name: "report 2026.pdf", parent: "docs", data: report,
                      attributes: NodeAttributes(kind: .file, mode: 0o640, modifiedSeconds: 1_700_000_000, modifiedNanoseconds: 123_456_789,
                                                 extendedAttributes: ["user.comment": Array("draft".utf8)]))
        // The same name in the same folder, made later on "another machine".
        try Self.push(setup, "r2", name: "report 2026.pdf", parent: "docs", data: Data("the other one".utf8),
                      attributes: NodeAttributes(kind: .file, mode: 0o600, modifiedSeconds: 1_700_000_500))
        try Self.push(setup, "lnk", name: "latest", parent: "docs", data: Data(),
                      attributes: NodeAttributes(kind: .symlink, target: "report 2026.pdf"))
        try Self.push(setup, "top", name: "ñame with spaces & ü", parent: nil, data: Data("top".utf8),
                      attributes: NodeAttributes(kind: .file, mode: 0o644, modifiedSeconds: 1_650_000_000))
        try Self.push(setup, "lost", name: "orphan.txt", parent: "no-such-folder", data: Data("orphan".utf8), attributes: NodeAttributes())
        try setup.join("file://" + setup.bucket)
        let mount = try setup.mountB()
        let files = mount.path + "/files"

        // Listed, sized, typed, with modes and times, before any download.
        await #expect(try Shell.sh("ls \(Shell.quote(files))").output == "Documents\norphan.txt\nñame with spaces & ü\n")
        await #expect(try Shell.sh("cd \(Shell.quote(files + "/Documents")) && ls -1").output == "latest\nreport 2026 (r2).pdf\nreport 2026.pdf\n")
        let statted = try await Shell.sh("cd \(Shell.quote(files)) && stat -c '%F|%a|%s|%Y' Documents 'Documents/report 2026.pdf' 'Documents/report 2026 (r2).pdf' Documents/latest").output
        // (A link has no time of its own in the record: any.)
        #expect(statted.hasPrefix("directory|750|0|1600000000\nregular file|640|300000|1700000000\nregular file|600|13|1700000500\nsymbolic link|777|15|"),
                "\(statted)")
        await #expect(try Shell.sh("stat -c %y \(Shell.quote(files + "/Documents/report 2026.pdf"))").output.contains(".123456789"), "nanoseconds kept")
        await #expect(try Shell.sh("readlink \(Shell.quote(files + "/Documents/latest"))").output == "report 2026.pdf\n")
        #expect(try Shell.xattr("user.darkdisk.local", files + "/Documents/report 2026.pdf") == "none", "nothing downloaded yet")

        // Read by name: through the link too; the same bytes as the ID view.
        await #expect(try Shell.sh("cat \(Shell.quote(files + "/Documents/latest"))").stdout == report)
        await #expect(try Shell.sh("cat \(Shell.quote(files + "/Documents/report 2026 (r2).pdf"))").output == "the other one")
        await #expect(try Shell.sh("cmp \(Shell.quote(files + "/Documents/report 2026.pdf")) \(Shell.quote(mount.path + "/nodes/r1/data"))").status == 0)
        await #expect(try Shell.sh("cat \(Shell.quote(files + "/orphan.txt"))").output == "orphan", "a node whose folder is missing shows at the top")

        // Which node an entry is; the drive file's own state attributes work as on /nodes.
        #expect(try Shell.xattr("user.darkdisk.node", files + "/Documents") == "docs")
        #expect(try Shell.xattr("user.darkdisk.node", files + "/Documents/report 2026 (r2).pdf") == "r2")
        // (Linux answers `user.*` names on a symbolic link itself, with ENODATA: a link carries none.)
        await #expect(try Shell.sh("getfattr -h --only-values -n user.darkdisk.node \(Shell.quote(files + "/Documents/latest"))").status != 0)
        #expect(try Shell.xattr("user.darkdisk.local", files + "/Documents/report 2026.pdf") == "full")
        await #expect(try Shell.sh("getfattr -n user.darkdisk.node \(Shell.quote(mount.path + "/nodes/r1/data"))").status != 0, "not on the ID view")
        await #expect(try Shell.sh("ls \(Shell.quote(files + "/Documents/report 2026 (nope).pdf"))").status != 0)
        await #expect(try Shell.sh("ls \(Shell.quote(files + "/Documents/report 2026 (r1).pdf"))").status != 0, "the earliest holds the plain name only")

        // The ID view stays read-only: writes there are refused as on a read-only file system.
        let write = try await Shell.sh("echo x > \(Shell.quote(mount.path + "/nodes/r1/data"))")
        #expect(write.status != 0 && write.stderr.contains("Read-only file system"), "\(write.stderr)")
    }
}
