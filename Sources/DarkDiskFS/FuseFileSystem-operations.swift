import CFuse3
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
            FuseFileSystem.from(req).lookup(FuseFileSystem.reply(req, "lookup"), parent: parent, name: name)
        }
        // libfuse turns a batch of forgets into one call each.
        ops.forget = { req, ino, nlookup in
            FuseFileSystem.from(req).forget(ino, count: nlookup)
            fuse_reply_none(req)
        }
        ops.getattr = { req, ino, fi in
            FuseFileSystem.from(req).getattr(FuseFileSystem.reply(req, "getattr"), ino: ino, handle: fi?.pointee.fh)
        }
        ops.opendir = { req, ino, fi in
            FuseFileSystem.settled(req)?.opendir(FuseFileSystem.reply(req, "opendir"), ino: ino, fi: fi!)
        }
        ops.readdir = { req, ino, size, offset, fi in
            FuseFileSystem.settled(req)?.readdir(FuseFileSystem.reply(req, "readdir"), ino: ino, size: size, offset: offset, fi: fi!)
        }
        ops.readdirplus = { req, ino, size, offset, fi in
            FuseFileSystem.settled(req)?.readdir(FuseFileSystem.reply(req, "readdirplus"), ino: ino, size: size, offset: offset, fi: fi!, plus: true)
        }
        ops.releasedir = { req, _, fi in
            FuseFileSystem.from(req).releasedir(FuseFileSystem.reply(req, "releasedir"), fi: fi!)
        }
        ops.readlink = { req, ino in
            FuseFileSystem.from(req).readlink(FuseFileSystem.reply(req, "readlink"), ino: ino)
        }
        ops.open = { req, ino, fi in
            FuseFileSystem.settled(req)?.open(FuseFileSystem.reply(req, "open"), ino: ino, fi: fi!)
        }
        ops.read = { req, _, size, offset, fi in
            FuseFileSystem.from(req).read(FuseFileSystem.reply(req, "read"), size: size, offset: offset, fi: fi!)
        }
        ops.release = { req, _, fi in
            FuseFileSystem.from(req).release(FuseFileSystem.reply(req, "release"), fi: fi!)
        }
        // Asked only when the daemon checks permissions (single-user mounts): `access(2)` and `chdir`.
        ops.access = { req, ino, mask in
            FuseFileSystem.from(req).access(FuseFileSystem.reply(req, "access"), ino: ino, mask: mask)
        }
        ops.statfs = { req, _ in
            FuseFileSystem.from(req).statfs(FuseFileSystem.reply(req, "statfs"))
        }
        // Extended attributes. Unknown names answer ENODATA, never ENOSYS (which would make the
        // kernel stop asking for the whole mount).
        ops.getxattr = { req, ino, name, size in
            FuseFileSystem.from(req).getxattr(FuseFileSystem.reply(req, "getxattr"), ino: ino, name: name!, size: size)
        }
        ops.listxattr = { req, ino, size in
            FuseFileSystem.settled(req)?.listxattr(FuseFileSystem.reply(req, "listxattr"), ino: ino, size: size)
        }
        ops.setxattr = { req, ino, name, value, size, flags in
            FuseFileSystem.settled(req)?.setxattr(FuseFileSystem.reply(req, "setxattr"), ino: ino, name: name!, value: value, size: size, flags: flags)
        }
        ops.removexattr = { req, ino, name in
            FuseFileSystem.settled(req)?.removexattr(FuseFileSystem.reply(req, "removexattr"), ino: ino, name: name!)
        }
        // Writes: inside the drive (`/files`) as on a local disk; elsewhere the data is read-only. The mount
        // itself is not `ro` (the kernel would then refuse setxattr before asking), so every write outside
        // the drive answers EROFS here, as a read-only mount would; opening for writing answers it in `open`.
        ops.setattr = { req, ino, attr, toSet, fi in
            FuseFileSystem.from(req).setattr(FuseFileSystem.reply(req, "setattr"), ino: ino, attributes: attr!.pointee, toSet: toSet, fi: fi)
        }
        ops.mknod = { req, parent, name, mode, _ in
            guard let name = FuseFileSystem.name(req, name, ifInvalid: EILSEQ) else { return }
            FuseFileSystem.from(req).mknod(FuseFileSystem.reply(req, "mknod"), parent: parent, name: name, mode: mode)
        }
        ops.mkdir = { req, parent, name, mode in
            guard let name = FuseFileSystem.name(req, name, ifInvalid: EILSEQ) else { return }
            FuseFileSystem.from(req).mkdir(FuseFileSystem.reply(req, "mkdir"), parent: parent, name: name, mode: mode)
        }
        ops.unlink = { req, parent, name in
            guard let name = FuseFileSystem.name(req, name, ifInvalid: ENOENT) else { return }
            FuseFileSystem.from(req).unlink(FuseFileSystem.reply(req, "unlink"), parent: parent, name: name)
        }
        ops.rmdir = { req, parent, name in
            guard let name = FuseFileSystem.name(req, name, ifInvalid: ENOENT) else { return }
            FuseFileSystem.from(req).rmdir(FuseFileSystem.reply(req, "rmdir"), parent: parent, name: name)
        }
        ops.symlink = { req, target, parent, name in
            guard let name = FuseFileSystem.name(req, name, ifInvalid: EILSEQ), let target = FuseFileSystem.name(req, target, ifInvalid: EILSEQ) else { return }
            FuseFileSystem.from(req).symlink(FuseFileSystem.reply(req, "symlink"), target: target, parent: parent, name: name)
        }
        ops.rename = { req, parent, name, newParent, newName, flags in
            guard let name = FuseFileSystem.name(req, name, ifInvalid: ENOENT), let newName = FuseFileSystem.name(req, newName, ifInvalid: EILSEQ) else { return }
            FuseFileSystem.from(req).rename(FuseFileSystem.reply(req, "rename"), parent: parent, name: name,
                                             newParent: newParent, newName: newName, flags: flags)
        }
        ops.link = { req, _, newParent, _ in
            FuseFileSystem.from(req).link(FuseFileSystem.reply(req, "link"), newParent: newParent)
        }
        ops.create = { req, parent, name, mode, fi in
            guard let name = FuseFileSystem.name(req, name, ifInvalid: EILSEQ) else { return }
            FuseFileSystem.from(req).create(FuseFileSystem.reply(req, "create"), parent: parent, name: name, mode: mode, fi: fi!)
        }
        ops.write = { req, _, buffer, size, offset, fi in
            FuseFileSystem.from(req).write(FuseFileSystem.reply(req, "write"), buffer: buffer, size: size, offset: offset, fi: fi!)
        }
        ops.flush = { req, _, fi in
            FuseFileSystem.from(req).flush(FuseFileSystem.reply(req, "flush"), fi: fi!)
        }
        ops.fsync = { req, _, _, fi in
            FuseFileSystem.from(req).fsync(FuseFileSystem.reply(req, "fsync"), fi: fi!)
        }
        ops.fsyncdir = { req, ino, _, _ in
            FuseFileSystem.from(req).fsyncdir(FuseFileSystem.reply(req, "fsyncdir"), ino: ino)
        }
        ops.fallocate = { req, _, mode, offset, length, fi in
            FuseFileSystem.from(req).fallocate(FuseFileSystem.reply(req, "fallocate"), mode: mode, offset: offset, length: length, fi: fi!)
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
