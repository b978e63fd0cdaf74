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
            FuseFileSystem.from(req).lookup(req, parent: parent, name: String(cString: name!))
        }
        ops.getattr = { req, ino, _ in
            FuseFileSystem.from(req).getattr(req, ino: ino)
        }
        ops.opendir = { req, ino, fi in
            FuseFileSystem.from(req).opendir(req, ino: ino, fi: fi!)
        }
        ops.readdir = { req, ino, size, offset, fi in
            FuseFileSystem.from(req).readdir(req, ino: ino, size: size, offset: offset, fi: fi!)
        }
        ops.releasedir = { req, _, fi in
            FuseFileSystem.from(req).releasedir(req, fi: fi!)
        }
        ops.open = { req, ino, fi in
            FuseFileSystem.from(req).open(req, ino: ino, fi: fi!)
        }
        ops.read = { req, _, size, offset, fi in
            FuseFileSystem.from(req).read(req, size: size, offset: offset, fi: fi!)
        }
        ops.release = { req, _, fi in
            FuseFileSystem.from(req).release(req, fi: fi!)
        }
        ops.statfs = { req, _ in
            FuseFileSystem.from(req).statfs(req)
        }
        ops.getxattr = { req, _, _, _ in
            // No attributes yet; ENODATA (not ENOSYS) keeps the kernel asking on every file.
            fuse_reply_err(req, ENODATA)
        }
        ops.listxattr = { req, _, size in
            if size == 0 { fuse_reply_xattr(req, 0) } else { fuse_reply_buf(req, nil, 0) }
        }
        ops.`init` = { _, conn in
            guard let conn else { return }
            // Ask for large reads: fewer round trips per MiB for `cat` and `cp`.
            conn.pointee.max_readahead = FuseFileSystem.maxReadahead
            conn.pointee.max_write = 1 << 20
        }
        return ops
    }
}
