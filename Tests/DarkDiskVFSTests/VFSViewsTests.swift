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
        #expect(fixture.errno { _ = try vfs.lookup(parent: fixture.files, name: longest + "n") } == ENAMETOOLONG, "not ENOENT")
    }

    /// An `unlink` returns before the index has it (its record is in the journal), yet nothing sees the entry
    /// after it: not a lookup, not a listing, and the name can be made again at once.
    @Test func anUnlinkedNameIsGoneAtOnceAndCanBeMadeAgain() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        for round in 0..<3 {
            try fixture.write("again", "round \(round)")
            try fixture.write("kept \(round)", "kept")
            try vfs.unlink(parent: fixture.files, name: "again")
            #expect(fixture.errno { _ = try vfs.lookup(parent: fixture.files, name: "again") } == ENOENT)
            #expect(!(try fixture.names(fixture.files)).contains("again"))
            #expect(fixture.errno { try vfs.unlink(parent: fixture.files, name: "again") } == ENOENT)
        }
        try fixture.write("again", "last")
        #expect(try fixture.contents(vfs.lookup(parent: fixture.files, name: "again").ino) == Array("last".utf8))
        #expect(try fixture.names(fixture.files) == ["again", "kept 0", "kept 1", "kept 2"])
        #expect(try fixture.store.check().problems.isEmpty)
    }

    /// A folder's link count is 2 and one per folder in it, as on a local disk; files do not count.
    @Test func aFoldersLinkCountCountsItsFolders() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        let top = try vfs.attributes(of: fixture.files).stat.st_nlink
        let a = try vfs.mkdir(parent: fixture.files, name: "a", mode: 0o755)
        #expect(a.attributes.st_nlink == 2)
        #expect(try vfs.attributes(of: fixture.files).stat.st_nlink == top + 1)
        _ = try vfs.mkdir(parent: a.ino, name: "b", mode: 0o755)
        _ = try vfs.mkdir(parent: a.ino, name: "c", mode: 0o755)
        try fixture.write("file", "not a folder", in: a.ino)
        #expect(try vfs.attributes(of: a.ino).stat.st_nlink == 4)
        try vfs.rmdir(parent: a.ino, name: "c")
        #expect(try vfs.attributes(of: a.ino).stat.st_nlink == 3)
        #expect(try vfs.lookup(parent: fixture.files, name: "a").attributes.st_nlink == 3)
    }

    /// Making, removing or moving an entry moves its folder's modification and change times (both folders'
    /// for a move), at once; an open with `O_TRUNC` moves the file's; a time set on a folder holds.
    @Test func entriesChangingMoveTheirFoldersTimes() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        let a = try vfs.mkdir(parent: fixture.files, name: "a", mode: 0o755)
        let b = try vfs.mkdir(parent: fixture.files, name: "b", mode: 0o755)
        func times(_ ino: Inode) throws -> (modified: timespec, changed: timespec) {
            let st = try vfs.attributes(of: ino).stat
            return (st.st_mtim, st.st_ctim)
        }
        func later(_ x: timespec, than y: timespec) -> Bool { (x.tv_sec, x.tv_nsec) > (y.tv_sec, y.tv_nsec) }
        func expectMoved(_ folders: [Inode], _ what: String, by change: () throws -> Void) throws {
            let before = try folders.map(times)
            usleep(20_000)
            try change()
            for (folder, old) in zip(folders, before) {
                let now = try times(folder)
                #expect(later(now.modified, than: old.modified) && later(now.changed, than: old.changed), "\(what) moves the folder's times")
            }
        }
        try expectMoved([a.ino], "a create") { try fixture.write("f", "text", in: a.ino) }
        try expectMoved([a.ino], "a mkdir") { _ = try vfs.mkdir(parent: a.ino, name: "sub", mode: 0o755) }
        try expectMoved([a.ino], "a symlink") { _ = try vfs.symlink(target: "f", parent: a.ino, name: "link") }
        try expectMoved([a.ino], "an unlink") { try vfs.unlink(parent: a.ino, name: "link") }
        try expectMoved([a.ino], "an rmdir") { try vfs.rmdir(parent: a.ino, name: "sub") }
        try expectMoved([a.ino, b.ino], "a move") { try vfs.rename(parent: a.ino, name: "f", newParent: b.ino, newName: "g", flags: 0) }
        let file = try vfs.lookup(parent: b.ino, name: "g")
        try expectMoved([file.ino], "an open with O_TRUNC") { vfs.release(handle: try fixture.open(file.ino, O_WRONLY | O_TRUNC)) }

        // A time set on the folder is its time, whatever changed in it before.
        var set = stat()
        set.st_mtim = timespec(tv_sec: 1_000_000_000, tv_nsec: 0)
        _ = try vfs.setAttributes(of: b.ino, set, changes: .modificationTime, handle: nil, caller: fixture.caller)
        #expect(try times(b.ino).modified.tv_sec == 1_000_000_000)
    }

    /// A size the format cannot hold is `EFBIG`, and one the store's disk cannot hold `ENOSPC`, at once: the
    /// file keeps its bytes and nothing is written (a `truncate -s 999999999999999` once wrote zeros until the
    /// disk was full).
    @Test func aSizeTooBigForTheFormatOrTheDiskIsRefusedAtOnce() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        let file = try fixture.write("f", "kept")
        func truncate(to size: Int64) -> Int32 {
            var set = stat()
            set.st_size = off_t(size)
            return fixture.errno { _ = try vfs.setAttributes(of: file.ino, set, changes: .size, handle: nil, caller: fixture.caller) }
        }
        #expect(truncate(to: Int64.max) == EFBIG)
        #expect(truncate(to: 999_999_999_999_999) == ENOSPC)
        let handle = try fixture.open(file.ino, O_WRONLY)
        defer { vfs.release(handle: handle) }
        #expect(fixture.errno { _ = try Array("x".utf8).withUnsafeBytes { try vfs.write(handle: handle, offset: Int64.max - 10, bytes: $0, appending: false) } } == EFBIG)
        #expect(try fixture.contents(file.ino) == Array("kept".utf8))
        #expect(truncate(to: 10) == 0)
        #expect(try vfs.attributes(of: file.ino).stat.st_size == 10)
    }

    /// The top of the drive takes a mode and a time as any folder does (`cp -a SRC/. files/` sets them), kept
    /// in the store; its size cannot be set and its owner cannot change.
    @Test func theTopOfTheDriveTakesAModeAndATime() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        var set = stat()
        set.st_mode = 0o750
        set.st_mtim = timespec(tv_sec: 1_234_567_890, tv_nsec: 42)
        let after = try vfs.setAttributes(of: fixture.files, set, changes: [.mode, .modificationTime], handle: nil, caller: fixture.caller).stat
        #expect(after.st_mode & 0o7777 == 0o750 && after.st_mode & S_IFMT == S_IFDIR)
        #expect(after.st_mtim.tv_sec == 1_234_567_890 && after.st_mtim.tv_nsec == 42)
        #expect(try vfs.attributes(of: fixture.files).stat.st_mode & 0o7777 == 0o750)
        #expect(try fixture.store.text("drive.top") == "750 1234567890 42", "kept in the store")
        set.st_uid = getuid() &+ 1
        #expect(fixture.errno { _ = try vfs.setAttributes(of: fixture.files, set, changes: .uid, handle: nil, caller: fixture.caller) } == EPERM)
        #expect(fixture.errno { _ = try vfs.setAttributes(of: fixture.files, set, changes: .size, handle: nil, caller: fixture.caller) } == EISDIR)
    }

    /// `renameat2`'s flags: `RENAME_EXCHANGE` swaps two entries (files, or a folder and a file in other
    /// folders), `RENAME_NOREPLACE` refuses an entry that exists; both at once, or a folder swapped below
    /// itself, is `EINVAL`.
    @Test func renameExchangeSwapsTwoEntriesAndNoReplaceKeepsOne() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        let exchange: UInt32 = 2, noReplace: UInt32 = 1
        try fixture.write("a", "text of a")
        try fixture.write("b", "text of b")
        try vfs.rename(parent: fixture.files, name: "a", newParent: fixture.files, newName: "b", flags: exchange)
        #expect(try fixture.contents(vfs.lookup(parent: fixture.files, name: "a").ino) == Array("text of b".utf8))
        #expect(try fixture.contents(vfs.lookup(parent: fixture.files, name: "b").ino) == Array("text of a".utf8))

        let folder = try vfs.mkdir(parent: fixture.files, name: "dir", mode: 0o755)
        try fixture.write("inner", "inside", in: folder.ino)
        let other = try vfs.mkdir(parent: fixture.files, name: "other", mode: 0o755)
        try fixture.write("file", "a file", in: other.ino)
        try vfs.rename(parent: fixture.files, name: "dir", newParent: other.ino, newName: "file", flags: exchange)
        let movedFolder = try vfs.lookup(parent: other.ino, name: "file")
        #expect(try fixture.contents(vfs.lookup(parent: movedFolder.ino, name: "inner").ino) == Array("inside".utf8))
        #expect(try fixture.contents(vfs.lookup(parent: fixture.files, name: "dir").ino) == Array("a file".utf8))

        #expect(fixture.errno { try vfs.rename(parent: fixture.files, name: "a", newParent: fixture.files, newName: "b", flags: noReplace) } == EEXIST)
        #expect(fixture.errno { try vfs.rename(parent: fixture.files, name: "a", newParent: fixture.files, newName: "b", flags: 3) } == EINVAL)
        #expect(fixture.errno { try vfs.rename(parent: fixture.files, name: "a", newParent: fixture.files, newName: "none", flags: exchange) } == ENOENT)
        // A folder and an entry inside it cannot swap.
        #expect(fixture.errno { try vfs.rename(parent: fixture.files, name: "other", newParent: other.ino, newName: "file", flags: exchange) } == EINVAL)
        try vfs.rename(parent: fixture.files, name: "a", newParent: fixture.files, newName: "c", flags: noReplace)
        #expect(try fixture.names(fixture.files) == ["b", "c", "dir", "other"])
        #expect(try fixture.store.check().problems.isEmpty)
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
