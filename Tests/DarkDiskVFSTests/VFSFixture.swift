import DarkDiskStore
import DarkDiskSync
import DarkDiskSystem
@testable import DarkDiskVFS
import Foundation
import Logging
import Testing

/// A fresh store (gone at `remove`) and the VFS over it, started as a mount starts it (its journal on), with
/// what `cat`, `echo >`, `ls`, `getfattr` and `setfattr` do, as the VFS's typed calls.
final class VFSFixture {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vfs-\(UUID().uuidString)").path
    let store: DiskManager
    let vfs: VFS
    let files: Inode
    let caller = VFS.Caller(uid: getuid())

    init() throws {
        store = try DiskManager.create(at: StoreLocation(directory: directory))
        vfs = VFS(manager: store, logger: Logger(label: "darkdisk.test.vfs"))
        _ = vfs.start(kernel: nil)
        files = try vfs.lookup(parent: 1, name: "files").ino
    }

    func remove() {
        vfs.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Opens `ino` (answered at once: it is stored here), or throws what the open answered.
    func open(_ ino: Inode, _ flags: Int32) throws -> UInt64 {
        let answer = Locked<Result<VFS.Opened, any Error>?>(nil)
        vfs.open(ino, flags: flags) { result in answer.withLock { $0 = result } }
        return try #require(answer.withLock { $0 }, "an open of a stored file was not answered at once").get().handle
    }

    /// Reads `size` bytes at `offset` through `handle`.
    func readBytes(_ handle: UInt64, offset: Int64 = 0, size: Int = 1 << 20) throws -> [UInt8] {
        let answer = Locked<Result<[UInt8], any Error>?>(nil)
        vfs.read(handle: handle, offset: offset, size: size) { result in answer.withLock { $0 = result.map { Array($0) } } }
        return try #require(answer.withLock { $0 }).get()
    }

    /// Reads `size` bytes at `offset` through `handle`, as text.
    func read(_ handle: UInt64, offset: Int64 = 0, size: Int = 1 << 20) throws -> String {
        String(decoding: try readBytes(handle, offset: offset, size: size), as: UTF8.self)
    }

    /// The whole content of `ino`, read through a handle of its own.
    func contents(_ ino: Inode) throws -> [UInt8] {
        let handle = try open(ino, O_RDONLY)
        defer { vfs.release(handle: handle) }
        return try readBytes(handle)
    }

    /// Makes file `name` in folder `parent` (default `/files`) holding `text`, closed as `echo text > name`
    /// leaves it.
    @discardableResult
    func write(_ name: String, _ text: String, in parent: Inode? = nil) throws -> VFS.Entry {
        let (entry, opened) = try vfs.create(parent: parent ?? files, name: name, mode: 0o644)
        let written = try Array(text.utf8).withUnsafeBytes { try vfs.write(handle: opened.handle, offset: 0, bytes: $0, appending: false) }
        #expect(written == text.utf8.count)
        try vfs.flush(handle: opened.handle)
        vfs.release(handle: opened.handle)
        return entry
    }

    /// The names a folder lists, without `.` and `..`.
    func names(_ folder: Inode) throws -> [String] {
        let handle = try vfs.openDirectory(folder)
        defer { vfs.releaseDirectory(handle) }
        return try vfs.listing(ofHandle: handle).map(\.name).filter { $0 != "." && $0 != ".." }
    }

    /// Extended attribute `name` of `ino`, as text (`getfattr -n`).
    func attribute(_ ino: Inode, _ name: String) throws -> String {
        String(decoding: try vfs.getxattr(ino, name: name), as: UTF8.self)
    }

    /// Sets extended attribute `name` of `ino` to `value` (`setfattr -n -v`).
    func setAttribute(_ ino: Inode, _ name: String, _ value: String) throws {
        try Array(value.utf8).withUnsafeBytes { try vfs.setxattr(ino, name: name, value: $0, flags: 0) }
    }

    /// The errno an operation fails with (0: it did not).
    func errno(_ operation: () throws -> Void) -> Int32 {
        do { try operation() } catch { return VFSErrno.from(error) }
        return 0
    }
}
