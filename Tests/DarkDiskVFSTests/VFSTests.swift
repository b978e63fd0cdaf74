import DarkDiskStore
import DarkDiskSync
import DarkDiskSystem
@testable import DarkDiskVFS
import Foundation
import Logging
import Testing

/// The file system the mount serves, driven in process through its typed operations, with no mount and
/// no root: what `cat`, `cp`, `mv`, `rm` and `getfattr` would see, request by request.
@Suite struct VFSTests {
    @Test func aFileWrittenIsFoundListedAndReadBackThroughEveryView() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        let made = try fixture.write("hello.txt", "hello, world\n")
        let found = try vfs.lookup(parent: fixture.files, name: "hello.txt")
        #expect(found.ino == made.ino && found.attributes.st_size == 13)
        #expect(found.attributes.st_mode == S_IFREG | 0o644)
        #expect(try vfs.attributes(of: found.ino).stat.st_size == 13)
        // Listed with its attributes, as `ls -l` gets them.
        let folder = try vfs.openDirectory(fixture.files)
        defer { vfs.releaseDirectory(folder) }
        let listed = try vfs.listing(ofHandle: folder).filter { $0.name != "." && $0.name != ".." }
        #expect(listed.map(\.name) == ["hello.txt"] && listed.first?.file?.stat.st_size == 13)
        // Read back by name, and through the ID view of the same node.
        let handle = try fixture.open(found.ino, O_RDONLY)
        #expect(try fixture.read(handle) == "hello, world\n")
        #expect(try fixture.read(handle, offset: 7, size: 5) == "world")
        vfs.release(handle: handle)
        let node = String(decoding: try vfs.getxattr(found.ino, name: "user.darkdisk.node"), as: UTF8.self)
        let nodeFolder = try vfs.lookup(parent: 2, name: node)
        let data = try vfs.lookup(parent: nodeFolder.ino, name: "data")
        #expect(data.attributes.st_size == 13)
        let byID = try fixture.open(data.ino, O_RDONLY)
        #expect(try fixture.read(byID) == "hello, world\n")
        vfs.release(handle: byID)
        // The ID view is read-only.
        #expect(fixture.errno { _ = try fixture.open(data.ino, O_WRONLY) } == EROFS)
    }

    @Test func aReaderOpenBeforeARewriteReadsTheNewVersionAfterTheClose() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        let file = try fixture.write("log", "first\n")
        let reader = try fixture.open(file.ino, O_RDONLY)
        #expect(try fixture.read(reader) == "first\n")
        let writer = try fixture.open(file.ino, O_WRONLY | O_APPEND)
        _ = try Array("second\n".utf8).withUnsafeBytes { try vfs.write(handle: writer, offset: 6, bytes: $0, appending: true) }
        // While it is written, every handle reads what the writer has.
        #expect(try fixture.read(reader) == "first\nsecond\n")
        try vfs.flush(handle: writer)
        vfs.release(handle: writer)
        #expect(try fixture.read(reader) == "first\nsecond\n")
        #expect(try vfs.attributes(of: file.ino, handle: reader).stat.st_size == 13)
        vfs.release(handle: reader)
    }

    @Test func foldersRenamesAndRemovalsAnswerAsALocalDiskDoes() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        let docs = try vfs.mkdir(parent: fixture.files, name: "docs", mode: 0o755)
        #expect(docs.attributes.st_mode == S_IFDIR | 0o755)
        try fixture.write("a.txt", "A", in: docs.ino)
        #expect(fixture.errno { try vfs.rmdir(parent: fixture.files, name: "docs") } == ENOTEMPTY)
        #expect(fixture.errno { try vfs.unlink(parent: fixture.files, name: "docs") } == EISDIR)
        #expect(fixture.errno { _ = try vfs.mkdir(parent: fixture.files, name: "docs", mode: 0o755) } == EEXIST)
        try vfs.rename(parent: docs.ino, name: "a.txt", newParent: fixture.files, newName: "b.txt", flags: 0)
        #expect(fixture.errno { _ = try vfs.lookup(parent: docs.ino, name: "a.txt") } == ENOENT)
        #expect(try vfs.lookup(parent: fixture.files, name: "b.txt").attributes.st_size == 1)
        let link = try vfs.symlink(target: "b.txt", parent: fixture.files, name: "latest")
        #expect(try vfs.readlink(link.ino) == "b.txt")
        #expect(fixture.errno { try vfs.rename(parent: fixture.files, name: "latest", newParent: fixture.files, newName: "b.txt", flags: 1) } == EEXIST)
        try vfs.unlink(parent: fixture.files, name: "b.txt")
        try vfs.rmdir(parent: fixture.files, name: "docs")
        #expect(fixture.errno { try vfs.link(newParent: fixture.files) } == EPERM)
        #expect(fixture.errno { _ = try vfs.mknod(parent: fixture.files, name: "fifo", mode: S_IFIFO | 0o644) } == EPERM)
        // Outside the drive nothing is made.
        #expect(fixture.errno { _ = try vfs.mkdir(parent: 2, name: "x", mode: 0o755) } == EROFS)
    }

    @Test func attributesChangeAsChmodTouchAndTruncateAsk() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        let file = try fixture.write("f", "0123456789")
        var wanted = stat()
        wanted.st_mode = 0o600
        wanted.st_mtim = timespec(tv_sec: 1_000_000_000, tv_nsec: 7)
        wanted.st_size = 4
        let after = try vfs.setAttributes(of: file.ino, wanted, changes: [.mode, .modificationTime, .size], handle: nil, caller: fixture.caller).stat
        #expect(after.st_mode == S_IFREG | 0o600 && after.st_size == 4)
        #expect(after.st_mtim.tv_sec == 1_000_000_000 && after.st_mtim.tv_nsec == 7)
        let handle = try fixture.open(file.ino, O_RDONLY)
        #expect(try fixture.read(handle) == "0123")
        vfs.release(handle: handle)
        // Another owner: refused.
        wanted.st_uid = getuid() &+ 1
        #expect(fixture.errno { _ = try vfs.setAttributes(of: file.ino, wanted, changes: [.uid], handle: nil, caller: fixture.caller) } == EPERM)
    }

    @Test func extendedAttributesOfDriveEntriesAndOfTheRoot() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        let file = try fixture.write("tagged", "t")
        try Array("blue".utf8).withUnsafeBytes { try vfs.setxattr(file.ino, name: "user.colour", value: $0, flags: 0) }
        #expect(try vfs.getxattr(file.ino, name: "user.colour") == Array("blue".utf8))
        #expect(try vfs.listxattr(file.ino) == Array("user.colour\0".utf8))
        #expect(fixture.errno { _ = try vfs.getxattr(file.ino, name: "user.size") } == ENODATA)
        #expect(fixture.errno { _ = try vfs.getxattr(file.ino, name: "security.capability") } == ENODATA)
        #expect(fixture.errno { try [UInt8]().withUnsafeBytes { try vfs.setxattr(file.ino, name: "system.posix_acl_access", value: $0, flags: 0) } } == EOPNOTSUPP)
        #expect(String(decoding: try vfs.getxattr(file.ino, name: "user.darkdisk.local"), as: UTF8.self) == "full")
        try vfs.removexattr(file.ino, name: "user.colour")
        #expect(try vfs.listxattr(file.ino).isEmpty)
        // The root's pool settings.
        try Array("1048576".utf8).withUnsafeBytes { try vfs.setxattr(1, name: "user.darkdisk.pool.data.max_size", value: $0, flags: 0) }
        #expect(String(decoding: try vfs.getxattr(1, name: "user.darkdisk.pool.data.max_size"), as: UTF8.self) == "1048576")
        #expect(fixture.errno { try Array("x".utf8).withUnsafeBytes { try vfs.setxattr(1, name: "user.darkdisk.pool.data.max_size", value: $0, flags: 0) } } == EINVAL)
    }

    @Test func aSingleUserMountChecksTheOwnersBits() throws {
        let fixture = try VFSFixture(), vfs = fixture.vfs
        defer { fixture.remove() }
        vfs.configure(checksOwnerBits: true, idViewsOwnerOnly: false)
        let file = try fixture.write("secret", "s")
        var mode = stat()
        mode.st_mode = 0o200
        _ = try vfs.setAttributes(of: file.ino, mode, changes: [.mode], handle: nil, caller: fixture.caller)
        #expect(fixture.errno { _ = try fixture.open(file.ino, O_RDONLY) } == EACCES)
        #expect(fixture.errno { try vfs.access(file.ino, mask: R_OK) } == (getuid() == 0 ? 0 : EACCES))
        let folder = try vfs.mkdir(parent: fixture.files, name: "closed", mode: 0o500)
        #expect(fixture.errno { _ = try vfs.create(parent: folder.ino, name: "x", mode: 0o644) } == EACCES)
    }
}
