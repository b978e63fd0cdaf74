import CFuse3
import DarkDiskVFS
#if canImport(Glibc)
import Glibc
#endif

/// The VFS's answers as FUSE replies: entries, attributes, handles, listings. Every error becomes an errno
/// here, through `VFSErrno`.
extension FuseFileSystem {
    /// Answers a request that changes something: 0, or the errno of what `operation` threw.
    func answer(_ reply: FuseReply, _ operation: () throws -> Void) {
        do {
            try operation()
            reply.error(0)
        } catch {
            reply.error(VFSErrno.from(error))
        }
    }

    /// Answers a request that hands the kernel an entry (a lookup, or a new folder, link or file), counted as
    /// one lookup; taken back if the kernel does not take it (the request was interrupted).
    func answer(_ reply: FuseReply, _ operation: () throws -> VFS.Entry) {
        do {
            let entry = try operation()
            var param = Self.param(entry)
            if reply.entry(&param) != 0 { vfs.forget(entry.ino, count: 1) }
        } catch {
            reply.error(VFSErrno.from(error))
        }
    }

    /// Answers a request for attributes.
    func answer(_ reply: FuseReply, _ operation: () throws -> (stat: stat, timeout: Double)) {
        do {
            var (st, timeout) = try operation()
            reply.attr(&st, timeout: timeout)
        } catch {
            reply.error(VFSErrno.from(error))
        }
    }

    static func param(_ entry: VFS.Entry) -> fuse_entry_param {
        var param = fuse_entry_param()
        param.ino = entry.ino
        param.generation = 1
        param.attr = entry.attributes
        param.attr_timeout = entry.timeout
        param.entry_timeout = entry.timeout
        return param
    }

    /// Opens a folder. Where the kernel allows it (FUSE's no-opendir mode) this answers `ENOSYS`, which the
    /// kernel takes as success for this and every later open of a folder: `find` and `du` then cost two
    /// round trips per folder, not four, and `readdir` lists by inode (`VFS.listing(of:offset:)`).
    func opendir(_ reply: FuseReply, ino: fuse_ino_t, fi: UnsafeMutablePointer<fuse_file_info>) {
        do {
            try vfs.mayList(ino)
            if noOpendir.load(ordering: .relaxed) {
                reply.error(ENOSYS)
                return
            }
            let handle = try vfs.openDirectory(ino)
            fi.pointee.fh = handle
            // The opener went away (interrupted): nobody will release this listing.
            if reply.open(fi) != 0 { vfs.releaseDirectory(handle) }
        } catch {
            reply.error(VFSErrno.from(error))
        }
    }

    /// Answers `readdir`, or with `plus` a `readdirplus`: each name with the attributes a lookup of it would
    /// give, so `ls -l`, `find` and `du` need no lookup per entry. Every entry but `.` and `..` that a
    /// readdirplus reply carries counts as one lookup of its inode (libfuse's contract).
    func readdir(_ reply: FuseReply, ino: fuse_ino_t, size: Int, offset: off_t, fi: UnsafeMutablePointer<fuse_file_info>, plus: Bool = false) {
        let listing: [DirectoryEntry]
        let listsByInode = noOpendir.load(ordering: .relaxed)
        do {
            listing = listsByInode ? try vfs.listing(of: ino, offset: Int64(offset)) : try vfs.listing(ofHandle: fi.pointee.fh)
        } catch {
            reply.error(VFSErrno.from(error))
            return
        }
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(size, 1))
        defer { buffer.deallocate() }
        var used = 0
        var index = max(Int(offset), 0)
        var counted: [fuse_ino_t] = []
        let folder = vfs.folderAttributes
        let timeout = vfs.listingTimeout(of: ino)
        while index < listing.count {
            let item = listing[index]
            var attributes = item.file?.stat ?? folder
            attributes.st_ino = __ino_t(item.ino)
            let needed: Int
            if plus {
                var param = fuse_entry_param()
                param.attr = attributes
                if item.name != "." && item.name != ".." {
                    // `.` and `..` carry no entry (ino 0): the kernel neither links nor counts them.
                    param.ino = item.ino
                    param.generation = 1
                    param.attr_timeout = timeout
                    param.entry_timeout = timeout
                }
                needed = fuse_add_direntry_plus(reply.request, buffer + used, size - used, item.name, &param, off_t(index + 1))
                if needed <= size - used, param.ino != 0 { counted.append(item.ino) }
            } else {
                var st = stat()
                st.st_ino = attributes.st_ino
                st.st_mode = attributes.st_mode
                needed = fuse_add_direntry(reply.request, buffer + used, size - used, item.name, &st, off_t(index + 1))
            }
            if needed > size - used { break }
            used += needed
            index += 1
        }
        // The end of this pass: the next one starts at offset 0 with a listing made anew.
        if used == 0, index >= listing.count, listsByInode { vfs.listingPassEnded(ino) }
        // Counted before the answer (a forget may follow it at once), taken back if the kernel did not take it.
        vfs.lookedUp(counted)
        if reply.listing(buffer, used) != 0 {
            for ino in counted { vfs.forget(ino, count: 1) }
        }
    }

    /// Opens a file; the answer may come later, from another thread (the kernel's file info is copied: its
    /// pointer is only valid during this call).
    func open(_ reply: FuseReply, ino: fuse_ino_t, fi: UnsafeMutablePointer<fuse_file_info>) {
        let pending = PendingRequest(reply: reply, fileInfo: fi.pointee)
        vfs.open(ino, flags: fi.pointee.flags) { [self] result in
            switch result {
            case .success(let opened):
                var info = pending.fileInfo
                info.fh = opened.handle
                info.keep_cache = opened.keepCache ? 1 : 0
                // The opener went away (interrupted): nobody will release this handle.
                if pending.reply.open(&info) != 0 { vfs.release(handle: opened.handle) }
            case .failure(let error):
                pending.reply.error(VFSErrno.from(error))
            }
        }
    }

    func create(_ reply: FuseReply, parent: fuse_ino_t, name: String, mode: mode_t, fi: UnsafeMutablePointer<fuse_file_info>) {
        do {
            let (entry, opened) = try vfs.create(parent: parent, name: name, mode: mode)
            var param = Self.param(entry)
            fi.pointee.fh = opened.handle
            fi.pointee.keep_cache = 0
            if reply.create(&param, fi) != 0 {
                // The creator went away (interrupted): the file stays, empty, as `creat` made it.
                vfs.forget(entry.ino, count: 1)
                vfs.release(handle: opened.handle)
            }
        } catch {
            reply.error(VFSErrno.from(error))
        }
    }
}

/// A request answered later, from another thread (libfuse's low-level API allows it), with a copy of its
/// file info (the kernel's pointer is only valid during the callback).
struct PendingRequest: @unchecked Sendable {
    let reply: FuseReply
    var fileInfo = fuse_file_info()
}

extension FuseReply {
    /// Answers a getxattr or listxattr: the size alone when asked with size 0, `ERANGE` when the caller's
    /// buffer is too small, else the bytes.
    func xattr(_ bytes: [UInt8], size: Int) {
        if size == 0 {
            xattrSize(bytes.count)
        } else if size < bytes.count {
            error(ERANGE)
        } else {
            bytes.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { self.buffer($0.baseAddress, $0.count) }
            }
        }
    }
}
