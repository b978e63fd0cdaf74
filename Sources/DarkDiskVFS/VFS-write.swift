import DarkDiskStore
import DarkDiskCloud
import DarkDiskDrive
import DarkDiskSync
import DarkDiskSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes inside the drive (`/files`), as on a local disk. A file open for writing is staged
/// content (`StagedContent`: encrypted, never plaintext on disk) shared by all its handles; a `close`
/// (FUSE's flush) or an `fsync` commits it into the store and queues it for upload. Folders, links,
/// renames, deletes and attributes are edits of the outline. The `Drive` does all of it; this file turns
/// inodes and handles into its calls. Everything outside `/files` stays read-only: `EROFS`.
extension VFS {
    // MARK: Making entries

    /// Makes file `name` in folder `parent` and opens it for writing (`creat`): its entry (counted as one
    /// lookup) and its handle. A caller that cannot hand them on `forget`s the entry and `release`s the handle.
    package func create(parent: Inode, name: String, mode: mode_t) throws -> (entry: Entry, opened: Opened) {
        try check(parent, [.write, .execute])
        do {
            let folder = try driveFolder(parent)
            // Made in memory and answered at once.
            let (node, writer, attributes) = try drive.createFile(name, in: folder, permissions: UInt32(mode))
            let entry = FSEntry.driveFile(node.id)
            let looked = lookedUpEntry(entry, (driveStat(attributes), nil), in: parent, named: name)
            return (looked, opened(OpenFile(entry: entry, ino: looked.ino, source: .drive(writer))))
        } catch {
            throw refused("create in \(folderLogName(parent))", error)
        }
    }

    /// A regular file made without opening it (`mknod`, `mkfifo`): device files, FIFOs and sockets have no
    /// place in a cloud drive (`EPERM`).
    package func mknod(parent: Inode, name: String, mode: mode_t) throws -> Entry {
        try check(parent, [.write, .execute])
        do {
            let folder = try driveFolder(parent)
            guard mode & S_IFMT == S_IFREG else { throw DarkDiskError(.notPermitted, "the drive keeps no device files, FIFOs or sockets") }
            let node = try drive.makeFile(name, in: folder, permissions: UInt32(mode))
            return try made(.driveFile(node.id), in: parent, named: name)
        } catch {
            throw refused("mknod in \(folderLogName(parent))", error)
        }
    }

    /// Hard links: a node has one place in the drive (`EPERM`); outside it, `EROFS`.
    package func link(newParent: Inode) throws {
        _ = try driveFolder(newParent)
        throw Errno(rawValue: EPERM)
    }

    package func mkdir(parent: Inode, name: String, mode: mode_t) throws -> Entry {
        try check(parent, [.write, .execute])
        do {
            let folder = try driveFolder(parent)
            let node = try drive.makeFolder(name, in: folder, permissions: UInt32(mode))
            return try made(.driveFolder(node.id), in: parent, named: name)
        } catch {
            throw refused("mkdir in \(folderLogName(parent))", error)
        }
    }

    package func symlink(target: String, parent: Inode, name: String) throws -> Entry {
        try check(parent, [.write, .execute])
        do {
            let folder = try driveFolder(parent)
            let node = try drive.makeLink(name, to: target, in: folder)
            return try made(.driveLink(node.id), in: parent, named: name)
        } catch {
            throw refused("symlink in \(folderLogName(parent))", error)
        }
    }

    // MARK: Removing and moving entries

    package func unlink(parent: Inode, name: String) throws {
        try check(parent, [.write, .execute])
        do {
            try drive.remove(name, in: try driveFolder(parent), isFolder: false)
        } catch {
            throw refused("unlink in \(folderLogName(parent))", error)
        }
    }

    package func rmdir(parent: Inode, name: String) throws {
        try check(parent, [.write, .execute])
        do {
            try drive.remove(name, in: try driveFolder(parent), isFolder: true)
        } catch {
            throw refused("rmdir in \(folderLogName(parent))", error)
        }
    }

    /// Renames or moves an entry (an outline edit; a folder moves with everything in it), as `renameat2(2)`
    /// does: `RENAME_NOREPLACE` refuses to replace an entry (`EEXIST`), `RENAME_EXCHANGE` swaps two entries
    /// in one change; both at once, or any other flag, is `EINVAL`.
    package func rename(parent: Inode, name: String, newParent: Inode, newName: String, flags: UInt32) throws {
        try check(parent, [.write, .execute])
        try check(newParent, [.write, .execute])
        do {
            let noReplace = flags & Self.renameNoReplace != 0, exchange = flags & Self.renameExchange != 0
            guard flags & ~(Self.renameNoReplace | Self.renameExchange) == 0, !(noReplace && exchange) else {
                throw DarkDiskError(.invalidArgument, "rename flags \(flags) are not supported")
            }
            guard let node = try drive.child(named: name, in: try driveFolder(parent)) else { throw Errno(rawValue: ENOENT) }
            let id = node.id
            // A folder moving to another one changes its `..`: it must be writable too.
            if node.attributes.kind == .folder, newParent != parent { try check(Self.driveEntry(node), .write) }
            let folder = try driveFolder(newParent)
            if exchange {
                guard let other = try drive.child(named: newName, in: folder) else { throw Errno(rawValue: ENOENT) }
                if other.attributes.kind == .folder, newParent != parent { try check(Self.driveEntry(other), .write) }
                try drive.exchange(node, other)
                driveNames.withLock { names in
                    names[id] = (newParent, newName)
                    names[other.id] = (parent, name)
                }
                return
            }
            try drive.move(node, to: newName, in: folder, replacing: !noReplace)
            // The kernel moves its entry itself: the watcher must not take the move for one made elsewhere.
            driveNames.withLock { $0[id] = (newParent, newName) }
        } catch {
            throw refused("rename from \(folderLogName(parent)) to \(folderLogName(newParent))", error)
        }
    }

    /// `renameat2(2)`'s flags (`<linux/fs.h>`).
    static let renameNoReplace: UInt32 = 1
    static let renameExchange: UInt32 = 2

    // MARK: Content

    /// Opens a drive file. Opened for writing (or truncating), it gets the node's staged content, made from
    /// its stored data or shared with the handles that write it already; a node whose data is only in the
    /// remote is downloaded first. Opened for reading, it is read as a node's data is, or from the staged
    /// content while someone writes it.
    func openDrive(id: NodeID, entry: FSEntry, ino: Inode, flags: Int32, mayFetch: Bool = true, answer: @escaping OpenAnswer) {
        let truncating = flags & O_TRUNC != 0 && flags & O_ACCMODE != O_RDONLY
        let writing = flags & O_ACCMODE != O_RDONLY
        do {
            if !writing, drive.writer(of: id) == nil {
                switch try drive.currentData(of: id) {
                case .stored(let export):
                    answer(openStored(entry: entry, ino: ino, export: export))
                    return
                case .remote(let outline):
                    if let downloads {
                        answer(.success(try openRemote(entry: entry, ino: ino, outline: outline, downloads: downloads)))
                        return
                    }
                case .none:
                    break
                }
            }
            let writer: DriveWriter
            do {
                writer = try drive.openForWriting(id, truncating: truncating)
            } catch let needed as DataNotLocal {
                guard mayFetch, let downloads else { throw DarkDiskError(.notFound, needed.message) }
                // Written where it lies: the whole file comes here first (the answer waits for it).
                told(downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true))).onCompletion(on: replies) { result in
                    if case .failure(let error) = result {
                        answer(.failure(self.refused("open of \(entry.logName) for writing (its download)", error)))
                        return
                    }
                    self.openDrive(id: id, entry: entry, ino: ino, flags: flags, mayFetch: false, answer: answer)
                }
                return
            }
            answer(.success(opened(OpenFile(entry: entry, ino: ino, source: .drive(writer)))))
        } catch {
            answer(.failure(refused("open of \(entry.logName)", error)))
        }
    }

    /// Writes `bytes` at `offset` through `handle` (at the end as the content has it when `appending`, as a
    /// local disk appends: the kernel's offset comes from the size it cached, which another process's append
    /// may have outrun; the kernel then drops its pages of the range and its attributes).
    package func write(handle: UInt64, offset: Int64, bytes: UnsafeRawBufferPointer, appending: Bool) throws -> Int {
        guard let file = handles.withLock({ $0[handle] }), case .drive(let writer) = file.source else { throw Errno(rawValue: EBADF) }
        guard offset >= 0 else { throw Errno(rawValue: EINVAL) }
        do {
            if appending {
                let placed = try writer.content.append(bytes)
                if placed != UInt64(offset) {
                    let (from, to) = (min(placed, UInt64(offset)), max(placed, UInt64(offset)) + UInt64(bytes.count))
                    kernel.withLock { $0 }?.dropCachedRange(file.ino, from: from, to: to)
                }
            } else {
                try writer.content.write(offset: UInt64(offset), bytes: bytes)
            }
            return bytes.count
        } catch {
            throw refused("write of \(bytes.count) bytes at \(offset) to \(file.entry.logName)", error)
        }
    }

    /// Every `close` of a handle (and of each of its duplicates): what was written commits now, so that a
    /// `close` that returned means the new version is in the store (in the kernel's page cache, as a local
    /// file system keeps a closed file: safe from a crash of the daemon; `fsync` makes it safe from a power loss).
    package func flush(handle: UInt64) throws {
        guard let file = handles.withLock({ $0[handle] }), case .drive(let writer) = file.source else { return }
        do {
            try drive.commit(writer)
        } catch {
            throw refused("commit of \(file.entry.logName)", error)
        }
    }

    /// Commits what was written and flushes the file's stored version, its folder and the index to the disk
    /// (also when a `close` committed it already).
    package func fsync(handle: UInt64) throws {
        guard let file = handles.withLock({ $0[handle] }), case .drive(let writer) = file.source else { return }
        do {
            try drive.fsync(writer)
        } catch {
            throw refused("fsync of \(file.entry.logName)", error)
        }
    }

    /// `fsync` of a folder: its entries, and every other, are in the index, and the index's log is on the
    /// disk (`Drive.sync`). A folder's names live in the index alone; the files' contents are flushed by their
    /// own `fsync`, as on a local disk.
    package func fsyncDirectory(_ ino: Inode) throws {
        guard inodes.withLock({ $0.entry(for: ino) })?.isDirectory == true else { throw Errno(rawValue: ENOTDIR) }
        do {
            try drive.sync()
        } catch {
            throw refused("fsync of a folder", error)
        }
    }

    /// `posix_fallocate` (mode 0): the file grows to cover the range; other modes are not supported.
    package func fallocate(handle: UInt64, mode: Int32, offset: Int64, length: Int64) throws {
        guard let file = handles.withLock({ $0[handle] }), case .drive(let writer) = file.source else { throw Errno(rawValue: EBADF) }
        guard mode == 0 else { throw Errno(rawValue: EOPNOTSUPP) }
        do {
            let end = UInt64(offset) + UInt64(length)
            if end > writer.content.size { try writer.content.truncate(to: end) }
        } catch {
            throw refused("fallocate of \(file.entry.logName)", error)
        }
    }

    // MARK: Attributes

    /// Which attributes a `setattr` sets (the bits of FUSE's `FUSE_SET_ATTR_*`).
    package struct AttributeChanges: OptionSet, Sendable {
        package let rawValue: UInt32
        package init(rawValue: UInt32) { self.rawValue = rawValue }
        package static let mode = AttributeChanges(rawValue: 1 << 0)
        package static let uid = AttributeChanges(rawValue: 1 << 1)
        package static let gid = AttributeChanges(rawValue: 1 << 2)
        package static let size = AttributeChanges(rawValue: 1 << 3)
        package static let accessTime = AttributeChanges(rawValue: 1 << 4)
        package static let modificationTime = AttributeChanges(rawValue: 1 << 5)
        package static let accessTimeNow = AttributeChanges(rawValue: 1 << 7)
        package static let modificationTimeNow = AttributeChanges(rawValue: 1 << 8)
        package static let changeTime = AttributeChanges(rawValue: 1 << 10)
    }

    /// chmod, utimens, truncate and chown of drive entries, from `attributes` where `changes` says; the
    /// entry's attributes after. The owner cannot change (`EPERM` for another); access times are not kept.
    /// `handle`: the handle a `ftruncate` or `futimens` acts through.
    package func setAttributes(of ino: Inode, _ attributes: stat, changes: AttributeChanges, handle: UInt64?, caller: Caller) throws -> (stat: stat, timeout: Double) {
        guard let entry = inodes.withLock({ $0.entry(for: ino) }) else { throw Errno(rawValue: ENOENT) }
        let id: NodeID
        switch entry {
        case .driveFile(let node), .driveFolder(let node), .driveLink(let node): id = node
        case .files: return try setTopAttributes(attributes, changes: changes)
        default: throw Errno(rawValue: EROFS)
        }
        do {
            if changes.contains(.uid), attributes.st_uid != uid {
                throw DarkDiskError(.notPermitted, "drive entries belong to the mounting user")
            }
            if changes.contains(.gid), attributes.st_gid != gid {
                throw DarkDiskError(.notPermitted, "drive entries belong to the mounting user's group")
            }
            if changes.contains(.size) {
                // (`truncate` by name; `ftruncate` acts through a handle opened for writing.)
                if handle == nil { try check(entry, .write) }
                guard case .driveFile = entry else { throw DarkDiskError(.isDirectory, "only files have a size to set") }
                try truncate(id, to: UInt64(attributes.st_size), handle: handle)
            }
            // The set-ID bits that a change of owner, or of data by anyone but root, takes away (`SetIDBits`).
            // A request that sets nothing is the kernel's own, before a write that must clear them.
            var cleared: UInt32?
            if case .driveFile = entry, !changes.contains(.mode) {
                let changesOwner = !changes.isDisjoint(with: [.uid, .gid])
                let changesData = changes.contains(.size) || changes.subtracting(.changeTime).isEmpty
                if changesOwner || (changesData && caller.uid != 0), let mode = try current(entry)?.stat.st_mode {
                    cleared = SetIDBits.cleared(UInt32(mode) & 0o7777)
                }
            }
            let setsMode = changes.contains(.mode) || cleared != nil
            let setsTime = !changes.isDisjoint(with: [.modificationTime, .modificationTimeNow])
            if setsMode || setsTime {
                let time = changes.contains(.modificationTimeNow)
                    ? Drive.now() : DriveTime(seconds: Int64(attributes.st_mtim.tv_sec), nanoseconds: UInt32(attributes.st_mtim.tv_nsec))
                let mode = cleared ?? UInt32(attributes.st_mode) & 0o7777
                try drive.setAttributes(of: id, permissions: setsMode ? mode : nil, modified: setsTime ? time : nil)
            }
        } catch {
            throw refused("setattr of \(entry.logName)", error)
        }
        // (As `getattr` answers: a file replaced meanwhile is ESTALE, with no log line.)
        return try self.attributes(of: ino, handle: handle)
    }

    /// chmod and utimens of the top of the drive (`Drive.setTopAttributes`); chown as for any entry.
    private func setTopAttributes(_ attributes: stat, changes: AttributeChanges) throws -> (stat: stat, timeout: Double) {
        do {
            if changes.contains(.uid), attributes.st_uid != uid { throw DarkDiskError(.notPermitted, "drive entries belong to the mounting user") }
            if changes.contains(.gid), attributes.st_gid != gid { throw DarkDiskError(.notPermitted, "drive entries belong to the mounting user's group") }
            if changes.contains(.size) { throw DarkDiskError(.isDirectory, "only files have a size to set") }
            let setsTime = !changes.isDisjoint(with: [.modificationTime, .modificationTimeNow])
            let time = changes.contains(.modificationTimeNow)
                ? Drive.now() : DriveTime(seconds: Int64(attributes.st_mtim.tv_sec), nanoseconds: UInt32(attributes.st_mtim.tv_nsec))
            if changes.contains(.mode) || setsTime {
                try drive.setTopAttributes(permissions: changes.contains(.mode) ? UInt32(attributes.st_mode) & 0o7777 : nil,
                                           modified: setsTime ? time : nil)
            }
        } catch {
            throw refused("setattr of /files", error)
        }
        return try self.attributes(of: inodes.withLock { $0.inode(for: .files) })
    }

    /// Truncates drive file `id` through the handle that asks (`ftruncate`), or by name (`truncate`), which
    /// commits at once. A file only the remote has is downloaded first, unless it is truncated to nothing
    /// (the request waits for it, as an open for writing does).
    private func truncate(_ id: NodeID, to size: UInt64, handle: UInt64?) throws {
        if let handle, let file = handles.withLock({ $0[handle] }), case .drive(let writer) = file.source {
            try writer.content.truncate(to: size)
            return
        }
        do {
            try drive.truncate(id, to: size)
        } catch let needed as DataNotLocal {
            guard let downloads else { throw DarkDiskError(.notFound, needed.message) }
            let done = DispatchSemaphore(value: 0)
            let outcome = Locked<Result<Void, any Error>?>(nil)
            told(downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true))).onCompletion { result in
                outcome.withLock { $0 = result.map { _ in () } }
                done.signal()
            }
            done.wait()
            try outcome.withLock { $0 }?.get()
            try drive.truncate(id, to: size)
        }
    }

    // MARK: Handles

    /// Lets go of an open file: a drive writer's handle detaches (committing if it was the last); a download
    /// kept going stops unless others wait for it.
    func close(_ file: OpenFile) {
        if case .drive(let writer) = file.source { drive.release(writer) }
        file.close()
    }

    // MARK: Helpers

    /// The node of a drive folder inode (nil: `/files`); `EROFS` outside the drive.
    func driveFolder(_ ino: Inode) throws -> NodeID? {
        switch inodes.withLock({ $0.entry(for: ino) }) {
        case .files?: return nil
        case .driveFolder(let id)?: return id
        case nil: throw Errno(rawValue: ENOENT)
        default: throw Errno(rawValue: EROFS)
        }
    }

    /// The entry an answer hands the kernel: `entry` as `name` in folder inode `parent`,
    /// counted as one lookup and remembered (folder and name) for the store watcher.
    func lookedUpEntry(_ entry: FSEntry, _ current: (stat: stat, version: InodeTable.Version?), in parent: Inode, named name: String) -> Entry {
        if let id = entry.driveNode { driveNames.withLock { $0[id] = (parent, name) } }
        let ino = inodes.withLock { table in
            let ino = table.inode(for: entry, version: current.version)
            table.lookedUp(ino)
            return ino
        }
        var attributes = current.stat
        attributes.st_ino = __ino_t(ino)
        return Entry(ino: ino, attributes: attributes, timeout: cacheTimeout(for: entry))
    }

    /// The entry a request that made `entry` hands the kernel.
    private func made(_ entry: FSEntry, in parent: Inode, named name: String) throws -> Entry {
        guard let current = try current(entry) else { throw Errno(rawValue: ENOENT) }
        return lookedUpEntry(entry, current, in: parent, named: name)
    }

    /// A folder as the log names it: by node ID, never by name (a log must not tell what files are called).
    func folderLogName(_ ino: Inode) -> String {
        switch inodes.withLock({ $0.entry(for: ino) }) {
        case .driveFolder(let id)?: "drive folder (node \(id))"
        case .files?: "the top of the drive"
        default: "a folder"
        }
    }

    /// Answers an error, with a log line unless it is one a program meets in normal use (a name taken,
    /// a folder not empty, a write outside the drive).
    func refused(_ what: String, _ error: any Error) -> any Error {
        let code = VFSErrno.from(error)
        if ![ENOENT, EEXIST, ENOTEMPTY, EROFS, EPERM, EISDIR, ENOTDIR, ENAMETOOLONG, EINVAL, EACCES].contains(code) {
            logger.error("\(what): \(error); answering \(Errno(rawValue: code))")
        }
        return error
    }
}
