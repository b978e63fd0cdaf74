import CFuse3
import DarkDiskStore
import DarkDiskCloud
import DarkDiskDrive
import DarkDiskSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes inside the drive (`/files`), as on a local disk. A file open for writing is staged
/// content (`StagedContent`: encrypted, never plaintext on disk) shared by all its handles; a `close`
/// (FUSE's flush) or an `fsync` commits it into the store and queues it for upload. Folders, links,
/// renames, deletes and attributes are edits of the outline. The `Drive` does all of it; this file turns
/// requests into its calls and its answers into replies. Everything outside `/files` stays read-only: `EROFS`.
extension FuseFileSystem {
    // MARK: Making entries

    func create(_ reply: FuseReply, parent: fuse_ino_t, name: String, mode: mode_t, fi: UnsafeMutablePointer<fuse_file_info>) {
        guard permits(reply, parent, [.write, .execute]) else { return }
        do {
            let folder = try driveFolder(parent)
            // Made in memory and answered at once.
            let (node, writer, attributes) = try drive.createFile(name, in: folder, permissions: UInt32(mode))
            let entry = FSEntry.driveFile(node.id)
            var param = lookedUpEntry(entry, (driveStat(attributes), nil), in: parent, named: name)
            let handle = nextHandle.wrappingAdd(1, ordering: .relaxed).oldValue
            handles.withLock { $0[handle] = OpenFile(entry: entry, ino: param.ino, source: .drive(writer)) }
            fi.pointee.fh = handle
            fi.pointee.keep_cache = 0
            if reply.create(&param, fi) != 0 {
                // The creator went away (interrupted): the file stays, empty, as `creat` made it.
                inodes.withLock { $0.forget(param.ino, count: 1) }
                if let file = handles.withLock({ $0.removeValue(forKey: handle) }) { close(file) }
            }
        } catch {
            refuse(reply, "create in \(folderLogName(parent))", error)
        }
    }

    /// A regular file made without opening it (`mknod`, `mkfifo`): device files, FIFOs and sockets have no
    /// place in a cloud drive (`EPERM`).
    func mknod(_ reply: FuseReply, parent: fuse_ino_t, name: String, mode: mode_t) {
        guard permits(reply, parent, [.write, .execute]) else { return }
        do {
            let folder = try driveFolder(parent)
            guard mode & S_IFMT == S_IFREG else { throw DarkDiskError(.notPermitted, "the drive keeps no device files, FIFOs or sockets") }
            let node = try drive.makeFile(name, in: folder, permissions: UInt32(mode))
            try answerEntry(reply, .driveFile(node.id), in: parent, named: name)
        } catch {
            refuse(reply, "mknod in \(folderLogName(parent))", error)
        }
    }

    /// Hard links: a node has one place in the drive (`EPERM`); outside it, `EROFS`.
    func link(_ reply: FuseReply, newParent: fuse_ino_t) {
        do {
            _ = try driveFolder(newParent)
            reply.error(EPERM)
        } catch {
            reply.error(FuseErrno.from(error))
        }
    }

    func mkdir(_ reply: FuseReply, parent: fuse_ino_t, name: String, mode: mode_t) {
        guard permits(reply, parent, [.write, .execute]) else { return }
        do {
            let folder = try driveFolder(parent)
            let node = try drive.makeFolder(name, in: folder, permissions: UInt32(mode))
            try answerEntry(reply, .driveFolder(node.id), in: parent, named: name)
        } catch {
            refuse(reply, "mkdir in \(folderLogName(parent))", error)
        }
    }

    func symlink(_ reply: FuseReply, target: String, parent: fuse_ino_t, name: String) {
        guard permits(reply, parent, [.write, .execute]) else { return }
        do {
            let folder = try driveFolder(parent)
            let node = try drive.makeLink(name, to: target, in: folder)
            try answerEntry(reply, .driveLink(node.id), in: parent, named: name)
        } catch {
            refuse(reply, "symlink in \(folderLogName(parent))", error)
        }
    }

    // MARK: Removing and moving entries

    func unlink(_ reply: FuseReply, parent: fuse_ino_t, name: String) {
        guard permits(reply, parent, [.write, .execute]) else { return }
        do {
            try drive.remove(name, in: try driveFolder(parent), isFolder: false)
            reply.error(0)
        } catch {
            refuse(reply, "unlink in \(folderLogName(parent))", error)
        }
    }

    func rmdir(_ reply: FuseReply, parent: fuse_ino_t, name: String) {
        guard permits(reply, parent, [.write, .execute]) else { return }
        do {
            try drive.remove(name, in: try driveFolder(parent), isFolder: true)
            reply.error(0)
        } catch {
            refuse(reply, "rmdir in \(folderLogName(parent))", error)
        }
    }

    /// Renames or moves an entry (an outline edit; a folder moves with everything in it). `RENAME_NOREPLACE`
    /// is honoured; `RENAME_EXCHANGE` is not supported (`EINVAL`, as on file systems without it).
    func rename(_ reply: FuseReply, parent: fuse_ino_t, name: String, newParent: fuse_ino_t, newName: String, flags: UInt32) {
        guard permits(reply, parent, [.write, .execute]), permits(reply, newParent, [.write, .execute]) else { return }
        do {
            guard flags & ~UInt32(1) == 0 else { throw DarkDiskError(.invalidArgument, "rename flags \(flags) are not supported") }
            guard let node = try drive.child(named: name, in: try driveFolder(parent)) else { throw Errno(rawValue: ENOENT) }
            let id = node.id
            // A folder moving to another one changes its `..`: it must be writable too.
            if node.attributes.kind == .folder, newParent != parent, !permits(reply, Self.driveEntry(node), .write) { return }
            let folder = try driveFolder(newParent)
            try drive.move(id, to: newName, in: folder, replacing: flags & 1 == 0)
            // The kernel moves its entry itself: the watcher must not take the move for one made elsewhere.
            driveNames.withLock { $0[id] = (newParent, newName) }
            reply.error(0)
        } catch {
            refuse(reply, "rename from \(folderLogName(parent)) to \(folderLogName(newParent))", error)
        }
    }

    // MARK: Content

    /// Opens a drive file. Opened for writing (or truncating), it gets the node's staged content, made from
    /// its stored data or shared with the handles that write it already; a node whose data is only in the
    /// remote is downloaded first. Opened for reading, it is read as a node's data is, or from the staged
    /// content while someone writes it.
    func openDrive(_ reply: FuseReply, id: NodeID, entry: FSEntry, ino: fuse_ino_t, fi: UnsafeMutablePointer<fuse_file_info>, mayFetch: Bool = true) {
        let flags = fi.pointee.flags
        let truncating = flags & O_TRUNC != 0 && flags & O_ACCMODE != O_RDONLY
        let writing = flags & O_ACCMODE != O_RDONLY
        do {
            if !writing, drive.writer(of: id) == nil {
                if let export = try manager.nodeFile(id, kind: .data) {
                    openStored(reply, entry: entry, ino: ino, export: export, fi: fi)
                    return
                }
                if let downloads, let outline = try manager.outlineEntry(id) {
                    try openRemote(reply, entry: entry, ino: ino, outline: outline, downloads: downloads, fi: fi)
                    return
                }
            }
            let writer: DriveWriter
            do {
                writer = try drive.openForWriting(id, truncating: truncating)
            } catch let needed as DataNotLocal {
                guard mayFetch, let downloads else { throw DarkDiskError(.notFound, needed.message) }
                // Written where it lies: the whole file comes here first (the reply waits for it).
                let pending = PendingRequest(reply: reply, fileInfo: fi.pointee)
                told(downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true))).onCompletion(on: replies) { result in
                    var fileInfo = pending.fileInfo
                    if case .failure(let error) = result {
                        self.refuse(pending.reply, "open of \(entry.logName) for writing (its download)", error)
                        return
                    }
                    self.openDrive(pending.reply, id: id, entry: entry, ino: ino, fi: &fileInfo, mayFetch: false)
                }
                return
            }
            answer(reply, open: OpenFile(entry: entry, ino: ino, source: .drive(writer)), fi: fi)
        } catch {
            refuse(reply, "open of \(entry.logName)", error)
        }
    }

    func write(_ reply: FuseReply, buffer: UnsafePointer<CChar>?, size: Int, offset: off_t, fi: UnsafeMutablePointer<fuse_file_info>) {
        guard let file = handles.withLock({ $0[fi.pointee.fh] }), case .drive(let writer) = file.source else { reply.error(EBADF); return }
        guard offset >= 0 else { reply.error(EINVAL); return }
        do {
            let bytes = UnsafeRawBufferPointer(start: buffer, count: size)
            if fi.pointee.flags & O_APPEND != 0 {
                // At the end as the content has it, as a local disk appends: the kernel's offset comes from the
                // size it cached, which another process's append may have outrun. Its pages of the range it
                // wrote go, and its attributes (the size).
                let placed = try writer.content.append(bytes)
                if placed != UInt64(offset) { dropCachedRange(file.ino, from: min(placed, UInt64(offset)), to: max(placed, UInt64(offset)) + UInt64(size)) }
            } else {
                try writer.content.write(offset: UInt64(offset), bytes: bytes)
            }
            reply.written(size)
        } catch {
            refuse(reply, "write of \(size) bytes at \(offset) to \(file.entry.logName)", error)
        }
    }

    /// Every `close` of a handle (and of each of its duplicates): what was written commits now, so that a
    /// `close` that returned means the new version is in the store (in the kernel's page cache, as a local
    /// file system keeps a closed file: safe from a crash of the daemon; `fsync` makes it safe from a power loss).
    func flush(_ reply: FuseReply, fi: UnsafeMutablePointer<fuse_file_info>) {
        guard let file = handles.withLock({ $0[fi.pointee.fh] }), case .drive(let writer) = file.source else { reply.error(0); return }
        do {
            try drive.commit(writer)
            reply.error(0)
        } catch {
            refuse(reply, "commit of \(file.entry.logName)", error)
        }
    }

    /// Commits what was written and flushes the file's stored version, its folder and the index to the disk
    /// (also when a `close` committed it already).
    func fsync(_ reply: FuseReply, fi: UnsafeMutablePointer<fuse_file_info>) {
        guard let file = handles.withLock({ $0[fi.pointee.fh] }), case .drive(let writer) = file.source else { reply.error(0); return }
        do {
            try drive.fsync(writer)
            reply.error(0)
        } catch {
            refuse(reply, "fsync of \(file.entry.logName)", error)
        }
    }

    /// `fsync` of a folder: its entries, and every other, are in the index, and the index's log is on the
    /// disk (`Drive.sync`). A folder's names live in the index alone; the files' contents are flushed by their
    /// own `fsync`, as on a local disk.
    func fsyncdir(_ reply: FuseReply, ino: fuse_ino_t) {
        guard inodes.withLock({ $0.entry(for: ino) })?.isDirectory == true else { reply.error(ENOTDIR); return }
        do throws(DarkDiskError) {
            try drive.sync()
            reply.error(0)
        } catch {
            refuse(reply, "fsync of a folder", error)
        }
    }

    /// `posix_fallocate` (mode 0): the file grows to cover the range; other modes are not supported.
    func fallocate(_ reply: FuseReply, mode: Int32, offset: off_t, length: off_t, fi: UnsafeMutablePointer<fuse_file_info>) {
        guard let file = handles.withLock({ $0[fi.pointee.fh] }), case .drive(let writer) = file.source else { reply.error(EBADF); return }
        guard mode == 0 else { reply.error(EOPNOTSUPP); return }
        do {
            let end = UInt64(offset) + UInt64(length)
            if end > writer.content.size { try writer.content.truncate(to: end) }
            reply.error(0)
        } catch {
            refuse(reply, "fallocate of \(file.entry.logName)", error)
        }
    }

    // MARK: Attributes

    /// chmod, utimens, truncate and chown of drive entries. The owner cannot change (`EPERM` for another);
    /// access times are not kept.
    func setattr(_ reply: FuseReply, ino: fuse_ino_t, attributes: stat, toSet: Int32, fi: UnsafeMutablePointer<fuse_file_info>?) {
        guard let entry = inodes.withLock({ $0.entry(for: ino) }) else { reply.error(ENOENT); return }
        let id: NodeID
        switch entry {
        case .driveFile(let node), .driveFolder(let node), .driveLink(let node): id = node
        default: reply.error(EROFS); return
        }
        do {
            if toSet & FUSE_SET_ATTR_UID != 0, attributes.st_uid != uid {
                throw DarkDiskError(.notPermitted, "drive entries belong to the mounting user")
            }
            if toSet & FUSE_SET_ATTR_GID != 0, attributes.st_gid != gid {
                throw DarkDiskError(.notPermitted, "drive entries belong to the mounting user's group")
            }
            if toSet & FUSE_SET_ATTR_SIZE != 0 {
                // (`truncate` by name; `ftruncate` acts through a handle opened for writing.)
                if fi == nil, !permits(reply, entry, .write) { return }
                guard case .driveFile = entry else { throw DarkDiskError(.isDirectory, "only files have a size to set") }
                try truncate(id, to: UInt64(attributes.st_size), handle: fi?.pointee.fh)
            }
            // The set-ID bits that a change of owner, or of data by anyone but root, takes away (`SetIDBits`).
            // A request that sets nothing is the kernel's own, before a write that must clear them.
            var cleared: UInt32?
            if case .driveFile = entry, toSet & FUSE_SET_ATTR_MODE == 0 {
                let changesOwner = toSet & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID) != 0
                let changesData = toSet & FUSE_SET_ATTR_SIZE != 0 || toSet & ~FUSE_SET_ATTR_CTIME == 0
                if changesOwner || (changesData && reply.callerUID != 0), let mode = try current(entry)?.stat.st_mode {
                    cleared = SetIDBits.cleared(UInt32(mode) & 0o7777)
                }
            }
            let setsMode = toSet & FUSE_SET_ATTR_MODE != 0 || cleared != nil
            let setsTime = toSet & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW) != 0
            if setsMode || setsTime {
                let time = toSet & FUSE_SET_ATTR_MTIME_NOW != 0
                    ? Drive.now() : DriveTime(seconds: Int64(attributes.st_mtim.tv_sec), nanoseconds: UInt32(attributes.st_mtim.tv_nsec))
                let mode = cleared ?? UInt32(attributes.st_mode) & 0o7777
                try drive.setAttributes(of: id, permissions: setsMode ? mode : nil, modified: setsTime ? time : nil)
            }
            getattr(reply, ino: ino, handle: fi?.pointee.fh)
        } catch {
            refuse(reply, "setattr of \(entry.logName)", error)
        }
    }

    /// Truncates drive file `id` through the handle that asks (`ftruncate`), or by name (`truncate`), which
    /// commits at once.
    private func truncate(_ id: NodeID, to size: UInt64, handle: UInt64?) throws {
        if let handle, let file = handles.withLock({ $0[handle] }), case .drive(let writer) = file.source {
            try writer.content.truncate(to: size)
            return
        }
        try drive.truncate(id, to: size)
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
    func driveFolder(_ ino: fuse_ino_t) throws -> NodeID? {
        switch inodes.withLock({ $0.entry(for: ino) }) {
        case .files?: return nil
        case .driveFolder(let id)?: return id
        case nil: throw Errno(rawValue: ENOENT)
        default: throw Errno(rawValue: EROFS)
        }
    }

    /// A `fuse_entry_param` for a reply that hands the kernel `entry` as `name` in folder inode `parent`,
    /// counted as one lookup and remembered (folder and name) for the store watcher.
    func lookedUpEntry(_ entry: FSEntry, _ current: (stat: stat, version: InodeTable.Version?), in parent: fuse_ino_t, named name: String) -> fuse_entry_param {
        if let id = entry.driveNode { driveNames.withLock { $0[id] = (parent, name) } }
        var param = fuse_entry_param()
        param.ino = inodes.withLock { table in
            let ino = table.inode(for: entry, version: current.version)
            table.lookedUp(ino)
            return ino
        }
        param.generation = 1
        param.attr = current.stat
        param.attr.st_ino = __ino_t(param.ino)
        param.attr_timeout = cacheTimeout(for: entry)
        param.entry_timeout = cacheTimeout(for: entry)
        return param
    }

    /// Answers a request that made `entry` with it.
    private func answerEntry(_ reply: FuseReply, _ entry: FSEntry, in parent: fuse_ino_t, named name: String) throws {
        guard let current = try current(entry) else { throw Errno(rawValue: ENOENT) }
        var param = lookedUpEntry(entry, current, in: parent, named: name)
        if reply.entry(&param) != 0 { inodes.withLock { $0.forget(param.ino, count: 1) } }
    }

    /// Tells the kernel, from a thread of its own, to drop its pages of bytes [from, to) of inode `ino` and
    /// its attributes: what it cached there is not what the file holds (an append went elsewhere).
    func dropCachedRange(_ ino: fuse_ino_t, from: UInt64, to: UInt64) {
        kernelNotices.async { [self] in
            guard let session = notifySession.withLock({ $0 }) else { return }
            _ = fuse_lowlevel_notify_inval_inode(session.pointer, ino, off_t(clamping: from), off_t(clamping: to - from))
        }
    }

    /// A folder as the log names it: by node ID, never by name (a log must not tell what files are called).
    func folderLogName(_ ino: fuse_ino_t) -> String {
        switch inodes.withLock({ $0.entry(for: ino) }) {
        case .driveFolder(let id)?: "drive folder (node \(id))"
        case .files?: "the top of the drive"
        default: "a folder"
        }
    }

    /// Answers an error, with a log line unless it is one a program meets in normal use (a name taken,
    /// a folder not empty, a write outside the drive).
    func refuse(_ reply: FuseReply, _ what: String, _ error: any Error) {
        let code = FuseErrno.from(error)
        if ![ENOENT, EEXIST, ENOTEMPTY, EROFS, EPERM, EISDIR, ENOTDIR, ENAMETOOLONG, EINVAL].contains(code) {
            logger.error("\(what): \(error); answering \(Errno(rawValue: code))")
        }
        reply.error(code)
    }
}
