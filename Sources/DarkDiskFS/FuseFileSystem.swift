import CFuse3
import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskDrive
import DarkDiskVFS
import Foundation
import Logging
import Synchronization
import DarkDiskSync

/// The FUSE driver: serves the store at a mount point through libfuse's low-level API. It is a thin
/// adapter: the file system itself is a `VFS` (inodes, handles, typed operations, no FUSE); this type keeps
/// libfuse's operation table, turns each request into a `VFS` call and its answer or error into a reply
/// (`FuseReply`; errors become errno in one place, `VFSErrno`), reads and writes `/dev/fuse` (`customIO`)
/// and tells the kernel what changed (`KernelNotices`).
///
/// libfuse calls the operations on its own worker threads; they run synchronously there (index reads,
/// one `pread` and decrypt per read) and never touch Swift's cooperative thread pool. Swift state is
/// reached from the C callbacks through the session's userdata pointer.
package final class FuseFileSystem: Sendable {
    let manager: DiskManager
    /// The file system this adapter serves.
    let vfs: VFS
    let logger: Logger
    /// The mount's `max_read=N` option (0: none), which `init` must repeat to libfuse.
    let maxRead = Atomic<UInt32>(0)
    /// Whether the kernel opens folders itself (FUSE's no-opendir mode, said in `init`).
    let noOpendir = Atomic<Bool>(false)
    /// Flags `init` found the kernel offering that libfuse leaves out of its reply; `customIO` adds them.
    let initFlagsToAdd = Atomic<UInt32>(0)
    /// The `unique` of the kernel's `INIT` request, whose reply `customIO` amends (0 until it came).
    let initUnique = Atomic<UInt64>(0)
    /// The session while its loop runs, for telling the kernel to drop what it cached (`dropCachedRange`).
    let notifySession = Locked<UnsafeSession?>(nil)
    /// Where those notices are sent from: one waits for the page locks of its range, which the request that
    /// asked for it may hold until it is answered.
    let kernelNotices = DispatchQueue(label: "darkdisk.kernel-notices")
    /// The largest readahead the driver asks the kernel for (see `ReadAhead`).
    static let maxReadahead: UInt32 = 4 << 20

    /// libfuse's session pointer: its notify calls may come from any thread while the session lives.
    struct UnsafeSession: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    /// `downloads` nil serves only what is stored. `pins`: the keeper a pin set through the mount wakes.
    /// `health`: whether the remote answers; while it does not, reads of remote-only files fail at once.
    package init(manager: DiskManager, downloads: DownloadManager? = nil, pins: PinKeeper? = nil, health: RemoteHealth? = nil,
                remoteTimeout: Duration = .seconds(30), logger: Logger) {
        self.manager = manager
        self.logger = logger
        vfs = VFS(manager: manager, downloads: downloads, pins: pins, health: health, remoteTimeout: remoteTimeout, logger: logger)
    }

    /// Mounts at `mountpoint` and serves requests until unmounted (`fusermount3 -u`, `darkdisk unmount`)
    /// or interrupted (SIGINT, SIGTERM, SIGHUP). `ready` runs once the mount is in place.
    /// - Parameter options: extra `-o` options, e.g. `allow_other`.
    package func run(mountpoint: String, options: [String] = [], threads: Int = 16, ready: () -> Void) throws(DarkDiskError) {
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: mountpoint, isDirectory: &isDirectory) {
            // Like `Scripts/darkdisk mount ~/DarkDisk` on a fresh machine: make the last component, not its parents.
            guard Glibc.mkdir(mountpoint, 0o755) == 0 else {
                throw DarkDiskError(.invalidArgument, "mount point \(mountpoint) does not exist and cannot be created: \(String(cString: strerror(errno)))")
            }
            isDirectory = true
        }
        guard isDirectory.boolValue else {
            throw DarkDiskError(.invalidArgument, "mount point \(mountpoint) is not a directory")
        }
        // Where the kernel will list the mount (symbolic links resolved), known before it exists.
        let resolvedMountpoint = MountTable.resolve(mountpoint)
        for option in options where !MountOptions.isAllowed(option) {
            throw DarkDiskError(.invalidArgument, MountOptions.UnsupportedOption(option: option).description)
        }
        do { try MountOptions.checkCombination(options) } catch { throw DarkDiskError(.invalidArgument, error.description) }
        maxRead.store(MountOptions.maxRead(in: options) ?? 0, ordering: .relaxed)
        let admitsOthers = MountOptions.admitsOthers(options)
        vfs.configure(checksOwnerBits: !admitsOthers && getuid() != 0, idViewsOwnerOnly: admitsOthers)
        let optionString = ((admitsOthers ? ["default_permissions"] : []) + ["fsname=darkdisk", "subtype=darkdisk"] + options).joined(separator: ",")
        let arguments: [String] = ["darkdisk", "-o", optionString]
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for arg in argv { free(arg) } }
        try argv.withUnsafeBufferPointer { (buffer) throws(DarkDiskError) -> Void in
            var args = darkdisk_fuse_args(Int32(argv.count - 1), UnsafeMutablePointer(mutating: buffer.baseAddress))
            var ops = FuseFileSystem.operations
            let userdata = Unmanaged.passUnretained(self).toOpaque()
            guard let session = fuse_session_new(&args, &ops, MemoryLayout<fuse_lowlevel_ops>.size, userdata) else {
                fuse_opt_free_args(&args)
                throw DarkDiskError(.invalidArgument, "cannot start a FUSE session with options '\(optionString)'")
            }
            defer {
                fuse_session_destroy(session)
                fuse_opt_free_args(&args)
            }
            // A parent may have left these blocked (Dispatch threads block every signal, and masks survive exec).
            var stopSignals = sigset_t()
            sigemptyset(&stopSignals)
            for signal in [SIGINT, SIGTERM, SIGHUP] {
                sigaddset(&stopSignals, signal)
                // libfuse only takes over signals left at their default; a shell's `&` ignores SIGINT.
                Glibc.signal(signal, SIG_DFL)
            }
            pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
            guard fuse_set_signal_handlers(session) == 0 else {
                throw DarkDiskError(.io, "cannot install signal handlers")
            }
            defer { fuse_remove_signal_handlers(session) }
            let (mounted, said) = StandardErrorCapture.capturing { fuse_session_mount(session, mountpoint) }
            guard mounted == 0 else {
                // libfuse's own reason ("fuse: failed to open /dev/fuse: Permission denied"), in the one line.
                let reason = said.split(separator: "\n").last { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
                throw DarkDiskError(.io, "cannot mount at \(mountpoint): " + (reason.map(String.init) ?? "is /dev/fuse available and fusermount3 installed?"))
            }
            guard useCustomIO(session) else {
                fuse_session_unmount(session)
                throw DarkDiskError(.io, "cannot set up the session's reads and writes of /dev/fuse at \(mountpoint)")
            }
            // The daemon lives on: it must not keep the caller's working directory busy (every path it uses
            // is absolute by now).
            _ = chdir("/")
            let raised = ReadAhead.raise(resolvedMountpoint: resolvedMountpoint, kilobytes: Int(FuseFileSystem.maxReadahead / 1024))
            logger.info("mounted \(manager.location.dataDirectory) at \(mountpoint)\(raised ? "" : " (readahead left at the kernel default)"); permissions checked by \(admitsOthers ? "the kernel" : "this daemon")")
            // A `close` commits a drive file with a record in the journal; the index takes the records in batches.
            notifySession.withLock { $0 = UnsafeSession(pointer: session) }
            let watcher = vfs.start(kernel: self)
            ready()
            let rc = darkdisk_fuse_session_loop_mt(session, UInt32(threads), 4)
            notifySession.withLock { $0 = nil }
            // (The watcher's thread ends before the session goes: no notice is in flight during the unmount.)
            watcher?.stop()
            fuse_session_unmount(session)
            // (A notice sent meanwhile returns once the connection is gone; none is sent after this.)
            kernelNotices.sync {}
            vfs.stop()
            logger.info("unmounted \(mountpoint) (loop ended with \(rc))")
        }
    }

    /// The driver behind a request.
    static func from(_ req: fuse_req_t?) -> FuseFileSystem {
        Unmanaged<FuseFileSystem>.fromOpaque(fuse_req_userdata(req)!).takeUnretainedValue()
    }

    /// A name (or a link's target) the kernel passed, as text; nil, the request answered `errno`, when it is
    /// not UTF-8. The drive keeps names as text: one that is not UTF-8 is refused (`EILSEQ` where it would be
    /// made; `ENOENT` where it is looked for: nothing has it), never repaired into another name that two
    /// different names would share. A valid name is kept byte for byte (`DriveNames.Bytes`).
    static func name(_ req: fuse_req_t?, _ pointer: UnsafePointer<CChar>?, ifInvalid errno: Int32) -> String? {
        guard let pointer, let name = String(validatingCString: pointer) else {
            fuse_reply_err(req, errno)
            return nil
        }
        return name
    }

    /// The owning answer to a request of `operation` (answered `EIO` with a log line if dropped unanswered).
    static func reply(_ req: fuse_req_t?, _ operation: String) -> FuseReply {
        FuseReply(req, operation, logger: from(req).logger)
    }
}

/// The kernel's caches, told through libfuse's notify calls while the session lives.
extension FuseFileSystem: KernelNotices {
    package func forgetName(_ name: String, in folder: Inode) {
        guard let session = notifySession.withLock({ $0 }) else { return }
        _ = name.withCString { fuse_lowlevel_notify_inval_entry(session.pointer, folder, $0, name.utf8.count) }
    }

    package func forgetInode(_ ino: Inode, attributesOnly: Bool) {
        guard let session = notifySession.withLock({ $0 }) else { return }
        // A negative offset: attributes only, never the pages (which a read waiting on the remote may hold).
        _ = fuse_lowlevel_notify_inval_inode(session.pointer, ino, attributesOnly ? -1 : 0, 0)
    }

    package func dropCachedRange(_ ino: Inode, from: UInt64, to: UInt64) {
        kernelNotices.async { [self] in
            guard let session = notifySession.withLock({ $0 }) else { return }
            _ = fuse_lowlevel_notify_inval_inode(session.pointer, ino, off_t(clamping: from), off_t(clamping: to - from))
        }
    }
}
