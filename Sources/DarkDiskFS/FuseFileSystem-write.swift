import CFuse3
import DarkDisk
import DarkDiskCloud
import DarkDiskSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes inside the drive (`/files`), as on a local disk. A file open for writing is staged
/// content (`StagedContent`: encrypted, never plaintext on disk) shared by all its handles; a `close`
/// (FUSE's flush) or an `fsync` commits it into the store and queues it for upload. Folders, links,
/// renames, deletes and attributes are edits of the outline (`DiskManager.createDriveNode` and friends).
/// Everything outside `/files` stays read-only: `EROFS`.
extension FuseFileSystem {
    // MARK: Making entries

    func create(_ reply: FuseReply, parent: fuse_ino_t, name: String, mode: mode_t, fi: UnsafeMutablePointer<fuse_file_info>) {
        guard permits(reply, parent, [.write, .execute]) else { return }
        do {
            let folder = try driveFolder(parent)
            // Made in memory and answered at once; its row goes into the index with its first commit.
            let prepared = try manager.prepareDriveFile(named: name, in: folder, attributes: Self.newAttributes(.file, mode: mode))
            let node = prepared.node
            let writer = try attachWriter(node.id, record: node) { prepared.content }
            // (The kernel looked the name up first and holds the folder meanwhile; a node another process
            // gave the same name since is shown beside it.)
            creates.add(prepared)
            let entry = FSEntry.driveFile(node.id)
            // (Its attributes as made: no query, as its content is the writer's.)
            guard let st = try driveStat(node) else {
                detachWriter(writer)
                throw Errno(rawValue: ENOENT)
            }
            var param = lookedUpEntry(entry, (st, nil), in: parent, named: name)
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
            let (node, content) = try manager.createDriveFile(named: name, in: folder, attributes: Self.newAttributes(.file, mode: mode))
            try manager.commitDriveFile(node.id, content: content)
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
            let node = try manager.createDriveNode(named: name, in: folder, attributes: Self.newAttributes(.folder, mode: mode))
            try answerEntry(reply, .driveFolder(node.id), in: parent, named: name)
        } catch {
            refuse(reply, "mkdir in \(folderLogName(parent))", error)
        }
    }

    func symlink(_ reply: FuseReply, target: String, parent: fuse_ino_t, name: String) {
        guard permits(reply, parent, [.write, .execute]) else { return }
        do {
            let folder = try driveFolder(parent)
            var attributes = Self.newAttributes(.symlink, mode: 0o777)
            attributes.target = target
            let node = try manager.createDriveNode(named: name, in: folder, attributes: attributes)
            try answerEntry(reply, .driveLink(node.id), in: parent, named: name)
        } catch {
            refuse(reply, "symlink in \(folderLogName(parent))", error)
        }
    }

    // MARK: Removing and moving entries

    func unlink(_ reply: FuseReply, parent: fuse_ino_t, name: String) {
        guard permits(reply, parent, [.write, .execute]) else { return }
        do {
            let (entry, id) = try driveChildNode(parent, name)
            if case .driveFolder = entry { throw DarkDiskError(.isDirectory, "'\(name)' is a folder") }
            try manager.deleteDriveNode(id)
            forgetRecords(id)
            reply.error(0)
        } catch {
            refuse(reply, "unlink in \(folderLogName(parent))", error)
        }
    }

    func rmdir(_ reply: FuseReply, parent: fuse_ino_t, name: String) {
        guard permits(reply, parent, [.write, .execute]) else { return }
        do {
            let (entry, id) = try driveChildNode(parent, name)
            guard case .driveFolder = entry else { throw DarkDiskError(.notDirectory, "'\(name)' is not a folder") }
            try manager.deleteDriveNode(id)
            forgetRecords(id)
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
            let (entry, id) = try driveChildNode(parent, name)
            // A folder moving to another one changes its `..`: it must be writable too.
            if case .driveFolder = entry, newParent != parent, !permits(reply, entry, .write) { return }
            let folder = try driveFolder(newParent)
            let replaced = try manager.moveDriveNode(id, to: newName, in: folder, replacing: flags & 1 == 0)
            if let replaced { forgetRecords(id, replaced) } else { forgetRecords(id) }
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
            if !writing, writers.withLock({ $0[id] }) == nil {
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
                writer = try attachWriter(id) { try self.content(of: id, truncated: truncating) }
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
            if truncating {
                do {
                    try writer.content.truncate(to: 0)
                    // A version of some size given up is replaced by the empty one at once, so that its room
                    // is free for what is written next, as a local disk frees a truncated file's blocks
                    // (`cp` of 40 MB over 30 MB needs 10 MB free there, not 40).
                    if let old = try manager.storedFile(id, kind: .data), old.storedSize >= Self.truncationFreesAtOnce {
                        try commit(writer)
                    }
                } catch {
                    detachWriter(writer)
                    throw error
                }
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
            try commit(writer)
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
            if try !commit(writer, durable: true) {
                try waitForDriveCommits()
                try manager.syncNodeData(writer.nodeID)
            }
            reply.error(0)
        } catch {
            refuse(reply, "fsync of \(file.entry.logName)", error)
        }
    }

    /// `fsync` of a folder: its entries, and every other, are in the index (the files made before it were
    /// inserted: the request is `settled`), and the index's log is on the disk. A folder's names live in
    /// the index alone; the files' contents are flushed by their own `fsync`, as on a local disk.
    func fsyncdir(_ reply: FuseReply, ino: fuse_ino_t) {
        guard inodes.withLock({ $0.entry(for: ino) })?.isDirectory == true else { reply.error(ENOTDIR); return }
        manager.syncIndex()
        reply.error(0)
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
            try settle(id)
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
                let time = toSet & FUSE_SET_ATTR_MTIME_NOW != 0 ? Self.now() : attributes.st_mtim
                let mode = cleared ?? UInt32(attributes.st_mode) & 0o7777
                // A file whose changes wait for their commit takes these with them (one transaction at close).
                if let writer = writers.withLock({ $0[id] }),
                   writer.content.deferAttributes(mode: setsMode ? mode : nil,
                                                  modified: setsTime ? (Int64(time.tv_sec), UInt32(time.tv_nsec)) : nil) {
                    getattr(reply, ino: ino, handle: fi?.pointee.fh)
                    return
                }
                creates.drain()
                let written = try manager.updateDriveAttributes(id) { (node) throws(DarkDiskError) in
                    if setsMode { node.mode = mode }
                    if setsTime {
                        node.modifiedSeconds = Int64(time.tv_sec)
                        node.modifiedNanoseconds = UInt32(time.tv_nsec)
                    }
                }
                folderRecords.forget([id])
                if let writer = writers.withLock({ $0[id] }) {
                    writer.remember(attributes: written)
                    // A time set now holds over the writes before it (`cp -p` sets it before closing).
                    if setsTime { writer.content.setModified() }
                }
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
        let writer = try attachWriter(id) { try self.content(of: id, truncated: size == 0) }
        defer { detachWriter(writer) }
        try writer.content.truncate(to: size)
        try commit(writer)
    }

    // MARK: Writers

    /// The staged content of a node for a new handle: shared with the handles that have it already, else
    /// made by `make` (outside the table's lock: it may read the index and open the stored file).
    /// `record`: the node's record, when the caller has just made it.
    func attachWriter(_ id: NodeID, record: DriveNode? = nil, make: () throws -> StagedContent) throws -> DriveWriter {
        while true {
            let (shared, mark) = writers.withLock { table -> (DriveWriter?, UInt64) in
                if let writer = table[id] {
                    writer.users.wrappingAdd(1, ordering: .relaxed)
                    return (writer, 0)
                }
                return (nil, table.makingStarts(id))
            }
            if let shared { return shared }
            let content: StagedContent
            do { content = try make() } catch {
                _ = writers.withLock { $0.makingEnds(id, mark: mark) }
                throw error
            }
            let fresh = DriveWriter(nodeID: id, content: content, record: record)
            let writer = writers.withLock { table -> DriveWriter? in
                let current = table.makingEnds(id, mark: mark)
                // Another open may have made one meanwhile: that one is shared. One that went meanwhile committed a
                // version newer than the one just read: made again.
                guard let writer = table[id] ?? (current ? fresh : nil) else { return nil }
                table[id] = writer
                writer.users.wrappingAdd(1, ordering: .relaxed)
                return writer
            }
            if let writer { return writer }
        }
    }

    /// One handle fewer. The last commits what is left, then the content goes (unless a new handle came).
    func detachWriter(_ writer: DriveWriter) {
        let left = writers.withLock { _ in writer.users.wrappingSubtract(1, ordering: .relaxed).newValue }
        guard left == 0 else { return }
        do { try commit(writer) } catch {
            logger.error("drive file (node \(writer.nodeID)): its last changes could not be committed: \(error)")
        }
        creates.forget(writer.nodeID)
        writers.withLock { table in
            if writer.users.load(ordering: .relaxed) == 0, table[writer.nodeID] === writer { table[writer.nodeID] = nil }
        }
    }

    /// Commits what was written, if anything (`durable`: flushed to the disk); whether there was.
    /// A new file's row goes into the index with its first commit, in one transaction.
    @discardableResult
    func commit(_ writer: DriveWriter, durable: Bool = false) throws -> Bool {
        let id = writer.nodeID
        let row = try creates.take(id)
        guard writer.content.isDirty else {
            if let row {
                do { try manager.insertDriveFile(row, allowingDuplicate: true) } catch {
                    creates.finish(id, putBack: row, failure: nil)
                    throw error
                }
                creates.finish(id, putBack: nil, failure: nil)
            }
            return false
        }
        // (The attributes set before it are in the record now: read it again when asked.)
        defer { writer.forgetRecord() }
        do {
            // A `close` returns once its record is in the journal; handles reading the node change over once the
            // index has it. (An `fsync` waits for the index.)
            try manager.commitDriveFile(id, content: writer.content, durable: durable, inserting: row) { [weak self] outcome in
                if case .indexed = outcome { self?.driveVersionChanged(id) }
            }
        } catch {
            // (Unless the transaction landed and what failed came after it.)
            if let row {
                let landed = manager.hasPendingDriveCommit(id) || (try? manager.driveNode(id)) != nil
                creates.finish(id, putBack: landed ? nil : row, failure: nil)
            }
            throw error
        }
        if row != nil { creates.finish(id, putBack: nil, failure: nil) }
        // Reading handles take the new version at their next read (which waits for the index to have it).
        driveVersionChanged(id)
        return true
    }

    /// Lets go of an open file: a drive writer's handle detaches (committing if it was the last); a download
    /// kept going stops unless others wait for it.
    func close(_ file: OpenFile) {
        if case .drive(let writer) = file.source { detachWriter(writer) }
        file.close()
    }

    // MARK: Helpers

    /// The staged content a drive file starts with: empty when truncated (a change to commit), else its
    /// stored data. `DataNotLocal` when its data is only in the remote.
    private func content(of id: NodeID, truncated: Bool) throws -> StagedContent {
        // (Its stored version is the index's: a commit of it still in the journal lands first.)
        try settle(id)
        if truncated { return try manager.stagedContent(for: id, base: nil, isNew: true) }
        if let export = try manager.nodeFile(id, kind: .data) { return try manager.stagedContent(for: id, base: export) }
        if let outline = try manager.outlineEntry(id), outline.dataSize > 0 {
            throw DataNotLocal(message: "drive file (node \(id)) is only in the remote, and no remote is set to fetch it from")
        }
        return try manager.stagedContent(for: id, base: nil)
    }

    /// The node of a drive folder inode (nil: `/files`); `EROFS` outside the drive.
    func driveFolder(_ ino: fuse_ino_t) throws -> NodeID? {
        switch inodes.withLock({ $0.entry(for: ino) }) {
        case .files?: return nil
        case .driveFolder(let id)?: return id
        case nil: throw Errno(rawValue: ENOENT)
        default: throw Errno(rawValue: EROFS)
        }
    }

    /// The entry named `name` in drive folder inode `parent`, and its node.
    private func driveChildNode(_ parent: fuse_ino_t, _ name: String) throws -> (FSEntry, NodeID) {
        let folder = try driveFolder(parent)
        switch try driveChild(of: folder, named: name) {
        case .driveFolder(let id)?: return (.driveFolder(id), id)
        case .driveFile(let id)?: return (.driveFile(id), id)
        case .driveLink(let id)?: return (.driveLink(id), id)
        default: throw Errno(rawValue: ENOENT)
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

    /// The stored size from which an open that truncates a file commits the empty version at once.
    static let truncationFreesAtOnce: UInt64 = 1 << 20

    /// Tells the kernel, from a thread of its own, to drop its pages of bytes [from, to) of inode `ino` and
    /// its attributes: what it cached there is not what the file holds (an append went elsewhere).
    func dropCachedRange(_ ino: fuse_ino_t, from: UInt64, to: UInt64) {
        kernelNotices.async { [self] in
            guard let session = notifySession.withLock({ $0 }) else { return }
            _ = fuse_lowlevel_notify_inval_inode(session.pointer, ino, off_t(clamping: from), off_t(clamping: to - from))
        }
    }

    /// Answers an error, with a log line unless it is one a program meets in normal use (a name taken,
    /// a folder not empty, a write outside the drive).
    /// A folder as the log names it: by node ID, never by name (a log must not tell what files are called).
    func folderLogName(_ ino: fuse_ino_t) -> String {
        switch inodes.withLock({ $0.entry(for: ino) }) {
        case .driveFolder(let id)?: "drive folder (node \(id))"
        case .files?: "the top of the drive"
        default: "a folder"
        }
    }

    func refuse(_ reply: FuseReply, _ what: String, _ error: any Error) {
        let code = FuseErrno.from(error)
        if ![ENOENT, EEXIST, ENOTEMPTY, EROFS, EPERM, EISDIR, ENOTDIR, ENAMETOOLONG, EINVAL].contains(code) {
            logger.error("\(what): \(error); answering \(Errno(rawValue: code))")
        }
        reply.error(code)
    }

    /// A new entry's attributes: `mode`'s permission bits (the kernel has applied the umask), made now.
    static func newAttributes(_ kind: NodeAttributes.Kind, mode: mode_t) -> NodeAttributes {
        let now = now()
        return NodeAttributes(kind: kind, mode: UInt32(mode) & 0o7777, modifiedSeconds: Int64(now.tv_sec), modifiedNanoseconds: UInt32(now.tv_nsec))
    }

    static func now() -> timespec {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return time
    }
}

/// A drive file to be written whose data only the remote has.
struct DataNotLocal: Error {
    let message: String
}
