import DarkDiskStore
import DarkDiskSync
import DarkDiskSystem
@testable import DarkDiskVFS
import Foundation
import Logging
import Testing

/// Names, the ID views, pins and the store's own attributes, driven in process through the VFS's typed
/// operations: what `ls`, `mv`, `getfattr` and `setfattr` would see on a mount, with no mount and no root.
@Suite struct VFSViewsTests {
    @Test func namesAreBytesSoNFCAndNFDAreTwoFilesAndLongNamesAreRefused() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        try fixture.write(composed, "composed")
        try fixture.write(decomposed, "decomposed")
        let listed = try fixture.names(fixture.files)
        #expect(listed.count == 2, "two spellings, two files, as on ext4")
        #expect(Set(listed.map { Array($0.utf8) }) == [Array(composed.utf8), Array(decomposed.utf8)])
        #expect(try fixture.contents(vfs.lookup(parent: fixture.files, name: composed).ino) == Array("composed".utf8))
        #expect(try fixture.contents(vfs.lookup(parent: fixture.files, name: decomposed).ino) == Array("decomposed".utf8))
        // 255 bytes is a name; 256 is not.
        let longest = String(repeating: "n", count: 255)
        try fixture.write(longest, "x")
        #expect(try vfs.lookup(parent: fixture.files, name: longest).attributes.st_size == 1)
        #expect(fixture.errno { _ = try vfs.create(parent: fixture.files, name: longest + "n", mode: 0o644) } == ENAMETOOLONG)
    }

    @Test func aRenameOverAFileReplacesItAndAMoveKeepsTheNode() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        let old = try fixture.write("draft", "new text")
        try fixture.write("final", "old text")
        let node = try fixture.attribute(old.ino, "user.darkdisk.node")
        try vfs.rename(parent: fixture.files, name: "draft", newParent: fixture.files, newName: "final", flags: 0)
        #expect(try fixture.names(fixture.files) == ["final"])
        let final = try vfs.lookup(parent: fixture.files, name: "final")
        #expect(try fixture.contents(final.ino) == Array("new text".utf8))
        #expect(try fixture.attribute(final.ino, "user.darkdisk.node") == node, "a rename is an outline edit: the same node")
        // Into a folder, and a folder into another.
        let a = try vfs.mkdir(parent: fixture.files, name: "a", mode: 0o755)
        let b = try vfs.mkdir(parent: fixture.files, name: "b", mode: 0o755)
        try vfs.rename(parent: fixture.files, name: "final", newParent: a.ino, newName: "final", flags: 0)
        try vfs.rename(parent: fixture.files, name: "a", newParent: b.ino, newName: "a", flags: 0)
        let moved = try vfs.lookup(parent: try vfs.lookup(parent: b.ino, name: "a").ino, name: "final")
        #expect(try fixture.contents(moved.ino) == Array("new text".utf8))
        // A folder cannot go inside itself.
        #expect(fixture.errno { try vfs.rename(parent: fixture.files, name: "b", newParent: try vfs.lookup(parent: b.ino, name: "a").ino, newName: "b", flags: 0) } == EINVAL)
    }

    @Test func writesAtAnOffsetLeaveZerosBeforeThemAndTruncateShortens() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        let (entry, opened) = try vfs.create(parent: fixture.files, name: "gap", mode: 0o644)
        _ = try Array("end".utf8).withUnsafeBytes { try vfs.write(handle: opened.handle, offset: 100_000, bytes: $0, appending: false) }
        try vfs.flush(handle: opened.handle)
        vfs.release(handle: opened.handle)
        let read = try fixture.contents(entry.ino)
        #expect(read.count == 100_003)
        #expect(read.prefix(100_000).allSatisfy { $0 == 0 } && read.suffix(3) == Array("end".utf8))
        var size = stat()
        size.st_size = 10
        let after = try vfs.setAttributes(of: entry.ino, size, changes: [.size], handle: nil, caller: fixture.caller).stat
        #expect(after.st_size == 10)
        #expect(try fixture.contents(entry.ino) == [UInt8](repeating: 0, count: 10))
    }

    @Test func aNodeImportedIntoTheStoreShowsInTheIDViewsAndItsPersistenceIsAnAttribute() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        let source = fixture.directory + "/source"
        try Data("photo bytes".utf8).write(to: URL(fileURLWithPath: source))
        let id = try NodeID("photo1")
        _ = try fixture.store.importNodeFile(DiskImport(cleartextFilePath: source), nodeID: id)
        _ = try fixture.store.importNodeFile(DiskImport(cleartextFilePath: source), nodeID: id, kind: .thumbnail)
        let nodes = try vfs.lookup(parent: 1, name: "nodes").ino
        #expect(try fixture.names(nodes) == ["photo1"])
        let folder = try vfs.lookup(parent: nodes, name: "photo1").ino
        #expect(Set(try fixture.names(folder)) == ["data", "thumbnail"], "no metadata: none is listed")
        #expect(fixture.errno { _ = try vfs.lookup(parent: folder, name: "metadata") } == ENOENT)
        let data = try vfs.lookup(parent: folder, name: "data")
        #expect(data.attributes.st_size == 11)
        #expect(try fixture.contents(data.ino) == Array("photo bytes".utf8))
        let thumbs = try vfs.lookup(parent: 1, name: "thumbs").ino
        #expect(try fixture.names(thumbs) == ["photo1"])
        // Imported in cache mode; the attribute moves it between pools, as the store says.
        #expect(try fixture.attribute(data.ino, "user.darkdisk.persistent") == "0")
        try fixture.setAttribute(data.ino, "user.darkdisk.persistent", "1")
        #expect(try fixture.store.files.storedFile(id)?.mode == .persistent)
        #expect(try fixture.attribute(data.ino, "user.darkdisk.persistent") == "1")
        #expect(fixture.errno { try fixture.setAttribute(data.ino, "user.darkdisk.persistent", "2") } == EINVAL)
        #expect(fixture.errno { try fixture.setAttribute(data.ino, "user.darkdisk.local", "none") } != 0, "read-only")
        // An avatar shows under its user.
        _ = try fixture.store.importUserAvatar(DiskImport(cleartextFilePath: source), userID: UserID("alice"), identityID: IdentityID("github|1"))
        let avatars = try vfs.lookup(parent: 1, name: "avatars").ino
        let alice = try vfs.lookup(parent: avatars, name: "alice").ino
        let avatar = try vfs.lookup(parent: alice, name: "github|1")
        #expect(try fixture.contents(avatar.ino) == Array("photo bytes".utf8))
    }

    @Test func aFoldersPinIsInheritedBelowItAndRemovingItInheritsAgain() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        let folder = try vfs.mkdir(parent: fixture.files, name: "keep", mode: 0o755)
        let file = try fixture.write("f", "x", in: folder.ino)
        #expect(try fixture.attribute(file.ino, "user.darkdisk.pin") == "0")
        try fixture.setAttribute(folder.ino, "user.darkdisk.pin", "1")
        #expect(try fixture.attribute(file.ino, "user.darkdisk.pin") == "1", "inherited from the folder")
        let id = try NodeID(try fixture.attribute(file.ino, "user.darkdisk.node"))
        #expect(try fixture.store.outline.isPinned(id))
        // A file made later in the folder is pinned too.
        let later = try fixture.write("g", "y", in: folder.ino)
        #expect(try fixture.attribute(later.ino, "user.darkdisk.pin") == "1")
        // Its own setting wins; removing it inherits again.
        try fixture.setAttribute(file.ino, "user.darkdisk.pin", "0")
        #expect(try fixture.attribute(file.ino, "user.darkdisk.pin") == "0")
        try vfs.removexattr(file.ino, name: "user.darkdisk.pin")
        #expect(try fixture.attribute(file.ino, "user.darkdisk.pin") == "1")
        #expect(fixture.errno { try fixture.setAttribute(file.ino, "user.darkdisk.pin", "yes") } == EINVAL)
    }

    @Test func aNewFileWaitsForItsUploadAndTheDriveReportsItsSize() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        let file = try fixture.write("queued", "twelve bytes")
        #expect(try fixture.attribute(file.ino, "user.darkdisk.sync") == "pending", "no uploader runs in this process")
        #expect(try fixture.attribute(file.ino, "user.darkdisk.local") == "full")
        #expect(try fixture.store.uploadQueue.all().count == 1)
        let root = try vfs.statfs()
        #expect(root.f_bsize > 0 && root.f_namemax == 255)
    }
}
