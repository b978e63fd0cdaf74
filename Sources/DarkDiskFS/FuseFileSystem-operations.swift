import CFuse3
import DarkDiskVFS
#if canImport(Glibc)
import Glibc
#endif

extension FuseFileSystem {
    /// The libfuse operation table. Each entry is a capture-free closure (a C function pointer) that finds
    /// the driver through the request's userdata and forwards to a method.
    static var operations: fuse_lowlevel_ops {
        var ops = fuse_lowlevel_ops()
        ops.lookup = { req, parent, name in
            guard let name = FuseFileSystem.name(req, name, ifInvalid: ENOENT) else { return }
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "lookup")
            fs.answer(reply) { try fs.vfs.lookup(parent: parent, name: name) }
        }
        // libfuse turns a batch of forgets into one call each.
        ops.forget = { req, ino, nlookup in
            FuseFileSystem.from(req).vfs.forget(ino, count: nlookup)
            fuse_reply_none(req)
        }
        ops.getattr = { req, ino, fi in
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "getattr")
            fs.answer(reply) { try fs.vfs.attributes(of: ino, handle: fi?.pointee.fh) }
        }
        ops.opendir = { req, ino, fi in
            FuseFileSystem.from(req).opendir(FuseFileSystem.reply(req, "opendir"), ino: ino, fi: fi!)
        }
        ops.readdir = { req, ino, size, offset, fi in
            FuseFileSystem.from(req).readdir(FuseFileSystem.reply(req, "readdir"), ino: ino, size: size, offset: offset, fi: fi!)
        }
        ops.readdirplus = { req, ino, size, offset, fi in
            FuseFileSystem.from(req).readdir(FuseFileSystem.reply(req, "readdirplus"), ino: ino, size: size, offset: offset, fi: fi!, plus: true)
        }
        ops.releasedir = { req, _, fi in
            FuseFileSystem.from(req).vfs.releaseDirectory(fi!.pointee.fh)
            fuse_reply_err(req, 0)
        }
        ops.readlink = { req, ino in
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "readlink")
            do { reply.link(try fs.vfs.readlink(ino)) } catch { reply.error(VFSErrno.from(error)) }
        }
        ops.open = { req, ino, fi in
            FuseFileSystem.from(req).open(FuseFileSystem.reply(req, "open"), ino: ino, fi: fi!)
        }
        ops.read = { req, _, size, offset, fi in
            let reply = FuseFileSystem.reply(req, "read")
            FuseFileSystem.from(req).vfs.read(handle: fi!.pointee.fh, offset: Int64(offset), size: size) { result in
                switch result {
                case .success(let bytes): reply.buffer(bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count)
                case .failure(let error): reply.error(VFSErrno.from(error))
                }
            }
        }
        ops.release = { req, _, fi in
            FuseFileSystem.from(req).vfs.release(handle: fi!.pointee.fh)
            fuse_reply_err(req, 0)
        }
        // Asked only when the daemon checks permissions (single-user mounts): `access(2)` and `chdir`.
        ops.access = { req, ino, mask in
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "access")
            fs.answer(reply) { try fs.vfs.access(ino, mask: mask) }
        }
        ops.statfs = { req, _ in
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "statfs")
            do {
                var st = try fs.vfs.statfs()
                reply.statfs(&st)
            } catch {
                reply.error(VFSErrno.from(error))
            }
        }
        // Extended attributes. Unknown names answer ENODATA, never ENOSYS (which would make the
        // kernel stop asking for the whole mount).
        ops.getxattr = { req, ino, name, size in
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "getxattr")
            do { reply.xattr(try fs.vfs.getxattr(ino, name: String(cString: name!)), size: size) } catch { reply.error(VFSErrno.from(error)) }
        }
        ops.listxattr = { req, ino, size in
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "listxattr")
            do { reply.xattr(try fs.vfs.listxattr(ino), size: size) } catch { reply.error(VFSErrno.from(error)) }
        }
        ops.setxattr = { req, ino, name, value, size, flags in
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "setxattr")
            // The kernel's copy of the value, looked at in place.
            let bytes = UnsafeRawBufferPointer(start: value.map(UnsafeRawPointer.init), count: value == nil ? 0 : size)
            fs.answer(reply) { try fs.vfs.setxattr(ino, name: String(cString: name!), value: bytes, flags: flags) }
        }
        ops.removexattr = { req, ino, name in
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "removexattr")
            fs.answer(reply) { try fs.vfs.removexattr(ino, name: String(cString: name!)) }
        }
        // Writes: inside the drive (`/files`) as on a local disk; elsewhere the data is read-only. The mount
        // itself is not `ro` (the kernel would then refuse setxattr before asking), so every write outside
        // the drive answers EROFS here, as a read-only mount would; opening for writing answers it in `open`.
        ops.setattr = { req, ino, attr, toSet, fi in
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "setattr")
            let caller = VFS.Caller(uid: reply.callerUID)
            fs.answer(reply) {
                try fs.vfs.setAttributes(of: ino, attr!.pointee, changes: VFS.AttributeChanges(rawValue: UInt32(bitPattern: toSet)),
                                         handle: fi?.pointee.fh, caller: caller)
            }
        }
        ops.mknod = { req, parent, name, mode, _ in
            guard let name = FuseFileSystem.name(req, name, ifInvalid: EILSEQ) else { return }
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "mknod")
            fs.answer(reply) { try fs.vfs.mknod(parent: parent, name: name, mode: mode) }
        }
        ops.mkdir = { req, parent, name, mode in
            guard let name = FuseFileSystem.name(req, name, ifInvalid: EILSEQ) else { return }
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "mkdir")
            fs.answer(reply) { try fs.vfs.mkdir(parent: parent, name: name, mode: mode) }
        }
        ops.unlink = { req, parent, name in
            guard let name = FuseFileSystem.name(req, name, ifInvalid: ENOENT) else { return }
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "unlink")
            fs.answer(reply) { try fs.vfs.unlink(parent: parent, name: name) }
        }
        ops.rmdir = { req, parent, name in
            guard let name = FuseFileSystem.name(req, name, ifInvalid: ENOENT) else { return }
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "rmdir")
            fs.answer(reply) { try fs.vfs.rmdir(parent: parent, name: name) }
        }
        ops.symlink = { req, target, parent, name in
            guard let name = FuseFileSystem.name(req, name, ifInvalid: EILSEQ), let target = FuseFileSystem.name(req, target, ifInvalid: EILSEQ) else { return }
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "symlink")
            fs.answer(reply) { try fs.vfs.symlink(target: target, parent: parent, name: name) }
        }
        ops.rename = { req, parent, name, newParent, newName, flags in
            guard let name = FuseFileSystem.name(req, name, ifInvalid: ENOENT), let newName = FuseFileSystem.name(req, newName, ifInvalid: EILSEQ) else { return }
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "rename")
            fs.answer(reply) { try fs.vfs.rename(parent: parent, name: name, newParent: newParent, newName: newName, flags: flags) }
        }
        ops.link = { req, _, newParent, _ in
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "link")
            fs.answer(reply) { try fs.vfs.link(newParent: newParent) }
        }
        ops.create = { req, parent, name, mode, fi in
            guard let name = FuseFileSystem.name(req, name, ifInvalid: EILSEQ) else { return }
            FuseFileSystem.from(req).create(FuseFileSystem.reply(req, "create"), parent: parent, name: name, mode: mode, fi: fi!)
        }
        ops.write = { req, _, buffer, size, offset, fi in
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "write")
            do {
                let bytes = UnsafeRawBufferPointer(start: buffer, count: size)
                reply.written(try fs.vfs.write(handle: fi!.pointee.fh, offset: Int64(offset), bytes: bytes, appending: fi!.pointee.flags & O_APPEND != 0))
            } catch {
                reply.error(VFSErrno.from(error))
            }
        }
        ops.flush = { req, _, fi in
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "flush")
            fs.answer(reply) { try fs.vfs.flush(handle: fi!.pointee.fh) }
        }
        ops.fsync = { req, _, _, fi in
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "fsync")
            fs.answer(reply) { try fs.vfs.fsync(handle: fi!.pointee.fh) }
        }
        ops.fsyncdir = { req, ino, _, _ in
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "fsyncdir")
            fs.answer(reply) { try fs.vfs.fsyncDirectory(ino) }
        }
        ops.fallocate = { req, _, mode, offset, length, fi in
            let fs = FuseFileSystem.from(req), reply = FuseFileSystem.reply(req, "fallocate")
            fs.answer(reply) { try fs.vfs.fallocate(handle: fi!.pointee.fh, mode: mode, offset: Int64(offset), length: Int64(length)) }
        }
        // The kernel copies through read and write instead.
        ops.copy_file_range = { req, _, _, _, _, _, _, _, _ in fuse_reply_err(req, ENOSYS) }
        ops.`init` = { userdata, conn in
            guard let conn, let userdata else { return }
            // Ask for large reads: fewer round trips per MiB for `cat` and `cp`.
            conn.pointee.max_readahead = FuseFileSystem.maxReadahead
            conn.pointee.max_write = 1 << 20
            // Every listing carries its entries' attributes (readdirplus), not only the first batch: `ls -l`
            // reads all names before it stats any, and with the adaptive mode each later batch came without
            // attributes, so every entry then cost a lookup of its own.
            conn.pointee.want &= ~UInt32(FUSE_CAP_READDIRPLUS_AUTO)
            // `open(O_TRUNC)` arrives as one open with the flag, not an open and a separate truncation: a
            // drive file's truncation then stays staged with the writes that follow and commits with them at
            // close, so a crash in between leaves the old version, not an empty file.
            if conn.pointee.capable & UInt32(FUSE_CAP_ATOMIC_O_TRUNC) != 0 { conn.pointee.want |= UInt32(FUSE_CAP_ATOMIC_O_TRUNC) }
            let fileSystem = Unmanaged<FuseFileSystem>.fromOpaque(userdata).takeUnretainedValue()
            let maxRead = fileSystem.maxRead.load(ordering: .relaxed)
            if maxRead > 0 { conn.pointee.max_read = maxRead }
            // Folders opened by the kernel alone (`opendir` answers ENOSYS): half the round trips of `find`.
            if conn.pointee.capable & UInt32(FUSE_CAP_NO_OPENDIR_SUPPORT) != 0 { fileSystem.noOpendir.store(true, ordering: .relaxed) }
            // Set-user-ID bits are cleared here (on write, truncation and chown), not by a `GETATTR` the kernel
            // would send before each `chown`: see `customIO`.
            if conn.pointee.capable & UInt32(FUSE_CAP_HANDLE_KILLPRIV) != 0 {
                conn.pointee.want |= UInt32(FUSE_CAP_HANDLE_KILLPRIV)
                fileSystem.initFlagsToAdd.store(FuseFileSystem.handleKillPrivilegeFlag, ordering: .releasing)
            }
        }
        return ops
    }
}
