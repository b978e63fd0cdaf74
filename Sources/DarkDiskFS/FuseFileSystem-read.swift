import CFuse3
import DarkDisk
import DarkDiskCrypto
#if canImport(Glibc)
import Glibc
#endif

extension FuseFileSystem {
    func open(_ req: fuse_req_t?, ino: fuse_ino_t, fi: UnsafeMutablePointer<fuse_file_info>) {
        guard let entry = inodes.withLock({ $0.entry(for: ino) }) else { fuse_reply_err(req, ENOENT); return }
        guard !entry.isDirectory else { fuse_reply_err(req, EISDIR); return }
        guard fi.pointee.flags & O_ACCMODE == O_RDONLY else { fuse_reply_err(req, EROFS); return }
        do {
            guard let export = try exportFile(of: entry) else { fuse_reply_err(req, ENOENT); return }
            let reader: CryptoFileReader
            do {
                reader = try CryptoFileReader(fileDescriptor: export.retainToken.fileDescriptor, key: export.cryptoFile.key, closeOnDeinit: false)
            } catch {
                logger.error("\(entry.logName): cannot open \(export.cryptoFile.path): \(error); answering EIO")
                fuse_reply_err(req, EIO)
                return
            }
            let handle = nextHandle.wrappingAdd(1, ordering: .relaxed).oldValue
            handles.withLock { $0[handle] = OpenFile(entry: entry, export: export, reader: reader) }
            let cacheValid = inodes.withLock { $0.serve(ino, fileID: export.fileID) }
            fi.pointee.fh = handle
            fi.pointee.keep_cache = cacheValid ? 1 : 0
            fuse_reply_open(req, fi)
        } catch {
            logger.error("\(entry.logName): open failed: \(error)")
            fuse_reply_err(req, FuseErrno.from(error))
        }
    }

    func read(_ req: fuse_req_t?, size: Int, offset: off_t, fi: UnsafeMutablePointer<fuse_file_info>) {
        guard let file = handles.withLock({ $0[fi.pointee.fh] }) else { fuse_reply_err(req, EBADF); return }
        guard offset >= 0 else { fuse_reply_err(req, EINVAL); return }
        let section = file.reader.dataSection
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 1), alignment: 16)
        defer { buffer.deallocate() }
        do {
            let n = try file.reader.read(section: section, offset: UInt64(offset), count: size, into: buffer)
            fuse_reply_buf(req, buffer.baseAddress!.assumingMemoryBound(to: CChar.self), n)
        } catch {
            if let chunk = error.chunk {
                logger.error("\(file.entry.logName): chunk \(chunk) of section \(error.section ?? section) in \(file.export.cryptoFile.path) failed authentication (\(error.message)); answering EIO")
            } else {
                logger.error("\(file.entry.logName): read at \(offset) failed: \(error); answering EIO")
            }
            fuse_reply_err(req, FuseErrno.from(error))
        }
    }

    func release(_ req: fuse_req_t?, fi: UnsafeMutablePointer<fuse_file_info>) {
        // Dropping the OpenFile releases its retain token (and completes a delete that waited for it).
        _ = handles.withLock { $0.removeValue(forKey: fi.pointee.fh) }
        fuse_reply_err(req, 0)
    }

    private func exportFile(of entry: FSEntry) throws(DarkDiskError) -> DiskExport? {
        switch entry {
        case .nodeFile(let id, let kind): try manager.nodeFile(id, kind: kind)
        case .thumb(let id): try manager.nodeFile(id, kind: .thumbnail)
        case .avatarFile(let user, let identity): try manager.userAvatar(user, identityID: identity)
        default: nil
        }
    }
}
