import DarkDiskStore
import DarkDiskDrive
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskSystem
#if canImport(Glibc)
import Glibc
#endif

/// Where an open is answered: at once, or later from another thread (after a download), exactly once.
package typealias OpenAnswer = @Sendable (Result<VFS.Opened, any Error>) -> Void
/// Where a read is answered, exactly once: the bytes are valid only during the call.
package typealias ReadAnswer = @Sendable (Result<UnsafeRawBufferPointer, any Error>) -> Void

extension VFS {
    /// Opens file `ino` with `open(2)`'s `flags`. A stored file is served from its retained export; a node
    /// only the remote has starts (or joins) its download; a drive file opened for writing gets its staged
    /// content. `answer` may be called later, from another thread (a small file fetched whole first, a drive
    /// file written where it lies downloaded first).
    package func open(_ ino: Inode, flags: Int32, answer: @escaping OpenAnswer) {
        guard let key = inodes.withLock({ $0.key(for: ino) }) else { answer(.failure(Errno(rawValue: ENOENT))); return }
        let entry = key.entry
        guard !entry.isDirectory else { answer(.failure(Errno(rawValue: EISDIR))); return }
        do { try check(entry, AccessMode(openFlags: flags)) } catch { answer(.failure(error)); return }
        if case .driveFile(let id) = entry {
            openDrive(id: id, entry: entry, ino: ino, flags: flags, answer: answer)
            return
        }
        // Read-only data: writing, and truncating (which O_RDONLY | O_TRUNC would ask for), is EROFS.
        guard flags & O_ACCMODE == O_RDONLY, flags & O_TRUNC == 0 else { answer(.failure(Errno(rawValue: EROFS))); return }
        do {
            _ = try currentStore()
            if let export = try exportFile(of: entry) {
                // An inode serves one version: a name that now leads to another one answers ESTALE, and the
                // kernel looks the name up again (once) and opens the new inode.
                let version = try version(ofStored: entry, fileID: export.fileID, format: export.cryptoFile.format,
                                          cloudFileID: export.cloudFileID, plaintextSize: export.plaintextSize)
                guard key.version == version else { answer(.failure(Errno(rawValue: ESTALE))); return }
                answer(openStored(entry: entry, ino: ino, export: export))
                return
            }
            guard let downloads, let current = try current(entry) else {
                answer(.failure(Errno(rawValue: ENOENT)))
                return
            }
            guard current.version == key.version else { answer(.failure(Errno(rawValue: ESTALE))); return }
            let size = UInt64(current.stat.st_size)
            if case .avatarFile(let user, let identity) = entry {
                // An avatar the remote's user record lists: small, fetched whole, then opened.
                let ticket = downloads.downloadUserAvatar(user, identityID: identity, options: DownloadOptions(cacheToDiskManager: true))
                openWhenFetched(entry: entry, ino: ino, size: size, answer: answer) { then in ticket.onCompletion(on: self.replies) { then($0.map { _ in }) } }
                return
            }
            guard let (id, kind) = entry.nodeSection, let outline = try manager.outline.entry(id), key.version == .remote(outline.cloudETag) else {
                answer(.failure(Errno(rawValue: ESTALE)))
                return
            }
            if kind == .data {
                answer(.success(try openRemote(entry: entry, ino: ino, outline: outline, downloads: downloads)))
                return
            }
            // A remote node's metadata or thumbnail: small, fetched whole (one range request), then opened.
            let ticket = told(downloads.downloadNodeMeta(id, components: kind == .metadata ? .metadata : .thumbnail,
                                                         options: DownloadOptions(cacheToDiskManager: true)))
            openWhenFetched(entry: entry, ino: ino, size: size, answer: answer) { then in ticket.onCompletion(on: self.replies) { then($0.map { _ in }) } }
        } catch {
            logger.error("\(entry.logName): open failed: \(error)")
            answer(.failure(error))
        }
    }

    /// Answers an open once a small file (metadata, thumbnail, avatar) has been fetched into the store by
    /// `fetch`, which calls back (on the reply queue) with the download's outcome. The fetched file must
    /// have the size the listing gave the inode, or nothing of it is served.
    private func openWhenFetched(entry: FSEntry, ino: Inode, size: UInt64, answer: @escaping OpenAnswer,
                                 fetch: (@escaping @Sendable (Result<Void, any Error>) -> Void) -> Void) {
        fetch { result in
            do {
                try result.get()
                guard let export = try self.exportFile(of: entry) else { answer(.failure(Errno(rawValue: ENOENT))); return }
                guard export.plaintextSize == size else {
                    self.logger.error("\(entry.logName): the remote's listing gives \(size) bytes but the file fetched holds \(export.plaintextSize); answering EIO")
                    answer(.failure(Errno(rawValue: EIO)))
                    return
                }
                answer(self.openStored(entry: entry, ino: ino, export: export))
            } catch {
                self.logger.error("\(entry.logName): cannot fetch it from the remote: \(error); answering \(Errno(rawValue: VFSErrno.from(error)))")
                answer(.failure(error))
            }
        }
    }

    /// A handle on a stored file.
    func openStored(entry: FSEntry, ino: Inode, export: DiskExport) -> Result<Opened, any Error> {
        let reader: CryptoFileReader
        do {
            reader = try export.reader()
        } catch {
            logger.error("\(entry.logName): cannot open \(export.cryptoFile.path): \(error); answering EIO")
            return .failure(Errno(rawValue: EIO))
        }
        return .success(opened(OpenFile(entry: entry, ino: ino, source: .stored(export, reader))))
    }

    /// Registers a handle. Its pages may stay cached for good, as an inode serves one version only; but a
    /// drive file's inode serves every version of its node, so its pages are dropped at each open.
    func opened(_ file: OpenFile) -> Opened {
        let handle = nextHandle.wrappingAdd(1, ordering: .relaxed).oldValue
        handles.withLock { $0[handle] = file }
        if case .driveFile = file.entry { return Opened(handle: handle, keepCache: false) }
        return Opened(handle: handle, keepCache: true)
    }

    /// Reads [offset, offset + size) through `handle` and answers with the bytes (fewer at the end of the
    /// file): at once for a stored file or one being written, later for a node whose bytes are still coming.
    package func read(handle: UInt64, offset: Int64, size: Int, answer: @escaping ReadAnswer) {
        guard let file = handles.withLock({ $0[handle] }) else { answer(.failure(Errno(rawValue: EBADF))); return }
        guard offset >= 0 else { answer(.failure(Errno(rawValue: EINVAL))); return }
        // A drive file being written is read from its staged content, through any handle; one rewritten since
        // this handle chose its source is read at its current version.
        if case .driveFile(let id) = file.entry {
            if let writer = drive.writer(of: id) {
                read(writer, size: size, offset: UInt64(offset), answer: answer)
                return
            }
            if file.takeStale() {
                let data: DriveData
                do throws(DarkDiskError) { data = try drive.currentData(of: id) } catch {
                    file.markStale()
                    answer(.failure(refused("read of \(file.entry.logName)", error)))
                    return
                }
                refreshDriveHandle(file, id, to: data)
            }
        }
        switch file.source {
        case .drive(let writer):
            read(writer, size: size, offset: UInt64(offset), answer: answer)
        case .stored(_, let reader):
            read(reader, file: file, size: size, offset: UInt64(offset), answer: answer)
        case .remote(let remote):
            readRemote(file: file, remote: remote, size: size, offset: UInt64(offset), answer: answer)
        }
    }

    /// Reads [offset, offset + size) of a drive file's staged content.
    func read(_ writer: DriveWriter, size: Int, offset: UInt64, answer: ReadAnswer) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 1), alignment: 16)
        defer { buffer.deallocate() }
        do {
            let n = try writer.content.read(offset: offset, count: size, into: buffer.baseAddress!)
            answer(.success(UnsafeRawBufferPointer(rebasing: buffer[..<n])))
        } catch {
            answer(.failure(refused("read at \(offset) of drive file (node \(writer.nodeID))", error)))
        }
    }

    /// Decrypts [offset, offset + size) of the file's data (one `pread`).
    func read(_ reader: CryptoFileReader, file: OpenFile, size: Int, offset: UInt64, answer: ReadAnswer) {
        let section = reader.dataSection
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 1), alignment: 16)
        defer { buffer.deallocate() }
        do {
            let n = try reader.read(section: section, offset: offset, count: size, into: buffer)
            answer(.success(UnsafeRawBufferPointer(rebasing: buffer[..<n])))
        } catch {
            if let chunk = error.chunk {
                logger.error("\(file.entry.logName): chunk \(chunk) of section \(error.section ?? section) failed authentication (\(error.message)); answering EIO")
                dropDamagedCopy(file)
            } else {
                logger.error("\(file.entry.logName): read at \(offset) failed: \(error); answering EIO")
            }
            answer(.failure(error))
        }
    }

    /// A damaged cache copy of a node the remote has is dropped (when its last reader closes), so the next
    /// open downloads it again; persistent files and nodes only this store has are left for the user.
    private func dropDamagedCopy(_ file: OpenFile) {
        guard case .stored(let export, _) = file.source, export.mode == .cache, let (id, kind) = file.entry.nodeSection,
              (try? manager.outline.entry(id)) != nil else { return }
        do {
            if try manager.files.deleteNodeFile(id, kind: kind) {
                logger.error("\(file.entry.logName): dropped the damaged cache copy; the next open downloads it again")
            }
        } catch {
            logger.error("\(file.entry.logName): cannot drop the damaged cache copy: \(error)")
        }
    }

    /// Lets go of `handle`. Dropping the OpenFile releases its retain token (and completes a delete that
    /// waited for it); a drive writer's handle detaches (committing if it was the last); a download it kept
    /// going stops unless other readers wait for it.
    package func release(handle: UInt64) {
        if let file = handles.withLock({ $0.removeValue(forKey: handle) }) { self.close(file) }
    }

    func exportFile(of entry: FSEntry) throws(DarkDiskError) -> DiskExport? {
        switch entry {
        case .nodeFile(let id, let kind): try manager.files.nodeFile(id, kind: kind)
        case .thumb(let id): try manager.files.nodeFile(id, kind: .thumbnail)
        case .avatarFile(let user, let identity): try manager.files.userAvatar(user, identityID: identity)
        case .driveFile(let id): try manager.files.nodeFile(id, kind: .data)
        default: nil
        }
    }
}
