import CFuse3
import DarkDiskStore
import DarkDiskDrive
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskSystem
#if canImport(Glibc)
import Glibc
#endif

extension FuseFileSystem {
    func open(_ reply: FuseReply, ino: fuse_ino_t, fi: UnsafeMutablePointer<fuse_file_info>) {
        guard let key = inodes.withLock({ $0.key(for: ino) }) else { reply.error(ENOENT); return }
        let entry = key.entry
        guard !entry.isDirectory else { reply.error(EISDIR); return }
        guard permits(reply, entry, AccessMode(openFlags: fi.pointee.flags)) else { return }
        if case .driveFile(let id) = entry {
            openDrive(reply, id: id, entry: entry, ino: ino, fi: fi)
            return
        }
        // Read-only data: writing, and truncating (which O_RDONLY | O_TRUNC would ask for), is EROFS.
        guard fi.pointee.flags & O_ACCMODE == O_RDONLY, fi.pointee.flags & O_TRUNC == 0 else { reply.error(EROFS); return }
        do {
            if let export = try exportFile(of: entry) {
                // An inode serves one version: a name that now leads to another one answers ESTALE, and the
                // kernel looks the name up again (once) and opens the new inode.
                let version = try version(ofStored: entry, fileID: export.fileID, format: export.cryptoFile.format, plaintextSize: export.plaintextSize)
                guard key.version == version else { reply.error(ESTALE); return }
                openStored(reply, entry: entry, ino: ino, export: export, fi: fi)
                return
            }
            guard let downloads, let current = try current(entry) else {
                reply.error(ENOENT)
                return
            }
            guard current.version == key.version else { reply.error(ESTALE); return }
            let size = UInt64(current.stat.st_size)
            if case .avatarFile(let user, let identity) = entry {
                // An avatar the remote's user record lists: small, fetched whole, then opened.
                let ticket = downloads.downloadUserAvatar(user, identityID: identity, options: DownloadOptions(cacheToDiskManager: true))
                openWhenFetched(reply, entry: entry, ino: ino, size: size, fi: fi) { then in ticket.onCompletion(on: self.replies) { then($0.map { _ in }) } }
                return
            }
            guard let (id, kind) = entry.nodeSection, let outline = try manager.outlineEntry(id), key.version == .remote(outline.cloudETag) else {
                reply.error(ESTALE)
                return
            }
            if kind == .data {
                try openRemote(reply, entry: entry, ino: ino, outline: outline, downloads: downloads, fi: fi)
                return
            }
            // A remote node's metadata or thumbnail: small, fetched whole (one range request), then opened.
            let ticket = told(downloads.downloadNodeMeta(id, components: kind == .metadata ? .metadata : .thumbnail,
                                                         options: DownloadOptions(cacheToDiskManager: true)))
            openWhenFetched(reply, entry: entry, ino: ino, size: size, fi: fi) { then in ticket.onCompletion(on: self.replies) { then($0.map { _ in }) } }
        } catch {
            logger.error("\(entry.logName): open failed: \(error)")
            reply.error(FuseErrno.from(error))
        }
    }

    /// Answers an open once a small file (metadata, thumbnail, avatar) has been fetched into the store by
    /// `fetch`, which calls back (on the reply queue) with the download's outcome. The fetched file must
    /// have the size the listing gave the inode, or nothing of it is served.
    private func openWhenFetched(_ reply: FuseReply, entry: FSEntry, ino: fuse_ino_t, size: UInt64, fi: UnsafeMutablePointer<fuse_file_info>,
                                 fetch: (@escaping @Sendable (Result<Void, any Error>) -> Void) -> Void) {
        let pending = PendingRequest(reply: reply, fileInfo: fi.pointee)
        fetch { result in
            var fileInfo = pending.fileInfo
            do {
                try result.get()
                guard let export = try self.exportFile(of: entry) else { pending.reply.error(ENOENT); return }
                guard export.plaintextSize == size else {
                    self.logger.error("\(entry.logName): the remote's listing gives \(size) bytes but the file fetched holds \(export.plaintextSize); answering EIO")
                    pending.reply.error(EIO)
                    return
                }
                self.openStored(pending.reply, entry: entry, ino: ino, export: export, fi: &fileInfo)
            } catch {
                self.logger.error("\(entry.logName): cannot fetch it from the remote: \(error); answering \(Errno(rawValue: FuseErrno.from(error)))")
                pending.reply.error(FuseErrno.from(error))
            }
        }
    }

    func openStored(_ reply: FuseReply, entry: FSEntry, ino: fuse_ino_t, export: DiskExport, fi: UnsafeMutablePointer<fuse_file_info>) {
        let reader: CryptoFileReader
        do {
            reader = try export.reader()
        } catch {
            logger.error("\(entry.logName): cannot open \(export.cryptoFile.path): \(error); answering EIO")
            reply.error(EIO)
            return
        }
        answer(reply, open: OpenFile(entry: entry, ino: ino, source: .stored(export, reader)), fi: fi)
    }

    /// Hands the kernel a handle. Its pages may stay cached for good, as an inode serves one version only;
    /// but a drive file's inode serves every version of its node, so its pages are dropped at each open.
    func answer(_ reply: FuseReply, open file: OpenFile, fi: UnsafeMutablePointer<fuse_file_info>) {
        let handle = nextHandle.wrappingAdd(1, ordering: .relaxed).oldValue
        handles.withLock { $0[handle] = file }
        fi.pointee.fh = handle
        if case .driveFile = file.entry { fi.pointee.keep_cache = 0 } else { fi.pointee.keep_cache = 1 }
        if reply.open(fi) != 0 {
            // The opener went away (interrupted): nobody will release this handle.
            if let file = handles.withLock({ $0.removeValue(forKey: handle) }) { close(file) }
        }
    }

    func read(_ reply: FuseReply, size: Int, offset: off_t, fi: UnsafeMutablePointer<fuse_file_info>) {
        guard let file = handles.withLock({ $0[fi.pointee.fh] }) else { reply.error(EBADF); return }
        guard offset >= 0 else { reply.error(EINVAL); return }
        // A drive file being written is read from its staged content, through any handle; one rewritten since
        // this handle chose its source is read at its current version.
        if case .driveFile(let id) = file.entry {
            if let writer = drive.writer(of: id) {
                answer(reply, read: writer, size: size, offset: UInt64(offset))
                return
            }
            if file.takeStale() {
                let data: DriveData
                do throws(DarkDiskError) { data = try drive.currentData(of: id) } catch {
                    file.markStale()
                    refuse(reply, "read of \(file.entry.logName)", error)
                    return
                }
                refreshDriveHandle(file, id, to: data)
            }
        }
        switch file.source {
        case .drive(let writer):
            answer(reply, read: writer, size: size, offset: UInt64(offset))
        case .stored(_, let reader):
            answer(reply, read: reader, file: file, size: size, offset: UInt64(offset))
        case .remote(let remote):
            readRemote(reply, file: file, remote: remote, size: size, offset: UInt64(offset))
        }
    }

    /// Reads [offset, offset + size) of a drive file's staged content and replies.
    func answer(_ reply: FuseReply, read writer: DriveWriter, size: Int, offset: UInt64) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 1), alignment: 16)
        defer { buffer.deallocate() }
        do {
            let n = try writer.content.read(offset: offset, count: size, into: buffer.baseAddress!)
            reply.buffer(buffer.baseAddress!.assumingMemoryBound(to: CChar.self), n)
        } catch {
            refuse(reply, "read at \(offset) of drive file (node \(writer.nodeID))", error)
        }
    }

    /// Decrypts [offset, offset + size) of the file's data (one `pread`) and replies.
    func answer(_ reply: FuseReply, read reader: CryptoFileReader, file: OpenFile, size: Int, offset: UInt64) {
        let section = reader.dataSection
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 1), alignment: 16)
        defer { buffer.deallocate() }
        do {
            let n = try reader.read(section: section, offset: offset, count: size, into: buffer)
            reply.buffer(buffer.baseAddress!.assumingMemoryBound(to: CChar.self), n)
        } catch {
            if let chunk = error.chunk {
                logger.error("\(file.entry.logName): chunk \(chunk) of section \(error.section ?? section) failed authentication (\(error.message)); answering EIO")
                dropDamagedCopy(file)
            } else {
                logger.error("\(file.entry.logName): read at \(offset) failed: \(error); answering EIO")
            }
            reply.error(FuseErrno.from(error))
        }
    }

    /// A damaged cache copy of a node the remote has is dropped (when its last reader closes), so the next
    /// open downloads it again; persistent files and nodes only this store has are left for the user.
    private func dropDamagedCopy(_ file: OpenFile) {
        guard case .stored(let export, _) = file.source, export.mode == .cache, let (id, kind) = file.entry.nodeSection,
              (try? manager.outlineEntry(id)) != nil else { return }
        do {
            if try manager.deleteNodeFile(id, kind: kind) {
                logger.error("\(file.entry.logName): dropped the damaged cache copy; the next open downloads it again")
            }
        } catch {
            logger.error("\(file.entry.logName): cannot drop the damaged cache copy: \(error)")
        }
    }

    func release(_ reply: FuseReply, fi: UnsafeMutablePointer<fuse_file_info>) {
        // Dropping the OpenFile releases its retain token (and completes a delete that waited for it); a
        // download it kept going stops unless other readers wait for it.
        if let file = handles.withLock({ $0.removeValue(forKey: fi.pointee.fh) }) { close(file) }
        reply.error(0)
    }

    func exportFile(of entry: FSEntry) throws(DarkDiskError) -> DiskExport? {
        switch entry {
        case .nodeFile(let id, let kind): try manager.nodeFile(id, kind: kind)
        case .thumb(let id): try manager.nodeFile(id, kind: .thumbnail)
        case .avatarFile(let user, let identity): try manager.userAvatar(user, identityID: identity)
        case .driveFile(let id): try manager.nodeFile(id, kind: .data)
        default: nil
        }
    }
}

/// A request answered later, from another thread (libfuse's low-level API allows it), with a copy of its
/// file info (the kernel's pointer is only valid during the callback).
struct PendingRequest: @unchecked Sendable {
    let reply: FuseReply
    var fileInfo = fuse_file_info()
}
