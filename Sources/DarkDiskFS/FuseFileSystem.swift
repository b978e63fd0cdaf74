import CFuse3
import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskDrive
import Foundation
import Logging
import Synchronization
import DarkDiskSync

/// The FUSE driver: serves the store read-only at a mount point through libfuse's low-level API.
///
/// libfuse calls the operations on its own worker threads; they run synchronously there (index reads,
/// one `pread` and decrypt per read) and never touch Swift's cooperative thread pool. Swift state is
/// reached from the C callbacks through the session's userdata pointer.
public final class FuseFileSystem: Sendable {
    let manager: DiskManager
    /// Fetches what is not stored: nodes of the remote's outline are listed and read on demand.
    let downloads: DownloadManager?
    let pins: PinKeeper?
    let health: RemoteHealth?
    /// How long a read of a node that is not stored waits for its bytes before answering `EIO`.
    let remoteTimeout: Duration
    /// Where reads answered later (after a download delivered their bytes) are decrypted and replied.
    let replies = BlockingPool.shared
    let logger: Logger
    let inodes = Locked(InodeTable())
    let handles = Locked<[UInt64: OpenFile]>([:])
    /// The folder inode and name the kernel last got each drive node by (a lookup or a listing), so a change
    /// made elsewhere (a rename, a delete) can drop that name and that folder's listing.
    let driveNames = Locked<[NodeID: (folder: fuse_ino_t, name: String)]>([:])
    /// `/files`: lookups, listings and changes of the drive, answered with what this daemon wrote.
    let drive: Drive
    let nextHandle = Atomic<UInt64>(1)
    /// The mount's `max_read=N` option (0: none), which `init` must repeat to libfuse.
    let maxRead = Atomic<UInt32>(0)
    let directoryListings = Locked<[UInt64: [DirectoryEntry]]>([:])
    /// Whether the kernel opens folders itself (FUSE's no-opendir mode, said in `init`).
    let noOpendir = Atomic<Bool>(false)
    /// Whether requests check the owner's mode bits (`permits`): a single-user mount (the kernel does not
    /// check) of an owner other than root (who may read and write anything).
    let checksOwnerBits = Atomic<Bool>(false)
    /// Whether `/nodes` and `/thumbs` are the owner's only: on a mount other users may enter
    /// (`allow_other`), the ID views would otherwise show them files the drive's modes keep from them.
    let idViewsOwnerOnly = Atomic<Bool>(false)
    /// Flags `init` found the kernel offering that libfuse leaves out of its reply; `customIO` adds them.
    let initFlagsToAdd = Atomic<UInt32>(0)
    /// The `unique` of the kernel's `INIT` request, whose reply `customIO` amends (0 until it came).
    let initUnique = Atomic<UInt64>(0)
    /// In no-opendir mode: the listings of the last few folders being read, by inode (`listing(of:offset:)`).
    let listingsByFolder = Locked(FolderListings())
    /// The session while its loop runs, for telling the kernel to drop what it cached (`dropCachedRange`).
    let notifySession = Locked<StoreWatcher.UnsafeSession?>(nil)
    /// Where those notices are sent from: one waits for the page locks of its range, which the request that
    /// asked for it may hold until it is answered.
    let kernelNotices = DispatchQueue(label: "darkdisk.kernel-notices")
    let mountTime = Date()
    let uid = getuid()
    let gid = getgid()
    /// The largest readahead the driver asks the kernel for (see `ReadAhead`).
    static let maxReadahead: UInt32 = 4 << 20
    /// How long the kernel may cache names and attributes: every change is told (`StoreWatcher`)
    /// within a second, so this only bounds what a missed change could leave stale.
    let cacheTimeout: Double = 60
    /// How long the kernel may cache the drive's names and attributes: a drive entry's name and folder can
    /// change (a rename pulled from another machine), which the store watcher does not tell yet.
    let driveCacheTimeout: Double = 1

    /// How long the kernel may cache `entry`'s name and attributes.
    func cacheTimeout(for entry: FSEntry) -> Double {
        switch entry {
        case .files, .driveFolder, .driveFile, .driveLink: driveCacheTimeout
        default: cacheTimeout
        }
    }

    /// `downloads` nil serves only what is stored. `pins`: the keeper a pin set through the mount wakes.
    /// `health`: whether the remote answers; while it does not, reads of remote-only files fail at once.
    public init(manager: DiskManager, downloads: DownloadManager? = nil, pins: PinKeeper? = nil, health: RemoteHealth? = nil,
                remoteTimeout: Duration = .seconds(30), logger: Logger) {
        self.manager = manager
        self.downloads = downloads
        self.pins = pins
        self.health = health
        self.remoteTimeout = remoteTimeout
        self.logger = logger
        drive = Drive(store: manager, logger: logger)
        // A commit that reached the index: handles reading the node change over to the new version.
        drive.observeVersions { [weak self] id in self?.driveVersionChanged(id) }
    }

    /// Mounts at `mountpoint` and serves requests until unmounted (`fusermount3 -u`, `darkdisk unmount`)
    /// or interrupted (SIGINT, SIGTERM, SIGHUP). `ready` runs once the mount is in place.
    /// - Parameter options: extra `-o` options, e.g. `allow_other`.
    public func run(mountpoint: String, options: [String] = [], threads: Int = 16, ready: () -> Void) throws(DarkDiskError) {
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
        checksOwnerBits.store(!admitsOthers && uid != 0, ordering: .relaxed)
        idViewsOwnerOnly.store(admitsOthers, ordering: .relaxed)
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
            // A `close` commits a drive file with a record in the journal; the index takes the records in batches.
            do {
                if try !drive.start() { logger.notice("drive files commit one transaction each (another process journals this store)") }
            } catch {
                logger.error("drive files commit one transaction each: \(error)")
            }
            let raised = ReadAhead.raise(resolvedMountpoint: resolvedMountpoint, kilobytes: Int(FuseFileSystem.maxReadahead / 1024))
            logger.info("mounted \(manager.location.dataDirectory) at \(mountpoint)\(raised ? "" : " (readahead left at the kernel default)"); permissions checked by \(admitsOthers ? "the kernel" : "this daemon")")
            ready()
            let watcher: StoreWatcher?
            do { watcher = try StoreWatcher(fileSystem: self, session: session) } catch {
                logger.error("changes of the outline will not be noticed: \(error)")
                watcher = nil
            }
            notifySession.withLock { $0 = StoreWatcher.UnsafeSession(pointer: session) }
            let rc = darkdisk_fuse_session_loop_mt(session, UInt32(threads), 4)
            notifySession.withLock { $0 = nil }
            watcher?.stop()
            fuse_session_unmount(session)
            // (A notice sent meanwhile returns once the connection is gone; none is sent after this.)
            kernelNotices.sync {}
            // Released after the lock: each handle's last reference lets go of retain tokens and descriptors.
            let closed = handles.withLock { open in defer { open.removeAll() }; return Array(open.values) }
            for handle in closed { close(handle) }
            if !drive.stop(timeout: 60) {
                logger.error("the index did not take every drive commit in a minute; the rest waits in the journal for the store's next opening")
            }
            logger.info("unmounted \(mountpoint) (loop ended with \(rc))")
        }
    }

    /// The driver behind a request.
    static func from(_ req: fuse_req_t?) -> FuseFileSystem {
        Unmanaged<FuseFileSystem>.fromOpaque(fuse_req_userdata(req)!).takeUnretainedValue()
    }

    /// The driver behind a request that reads the store directly (a listing, an open, an attribute of any
    /// entry), once the store has every change the drive took (`Drive.currentStore`); nil, the request
    /// answered `EIO`, when the index cannot take them.
    static func settled(_ req: fuse_req_t?) -> FuseFileSystem? {
        let fileSystem = from(req)
        do throws(DarkDiskError) { _ = try fileSystem.drive.currentStore() } catch {
            fileSystem.logger.error("\(error); answering EIO")
            fuse_reply_err(req, EIO)
            return nil
        }
        return fileSystem
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

/// The listings kept in no-opendir mode, by folder inode, and the order they were made in.
struct FolderListings: Sendable {
    var listings: [fuse_ino_t: [DirectoryEntry]] = [:]
    var order: [fuse_ino_t] = []
}

/// One line of a directory listing.
struct DirectoryEntry: Sendable {
    let name: String
    let ino: fuse_ino_t
    /// The entry's attributes as a lookup of the name answers them (for readdirplus); nil for a folder of
    /// the fixed tree (`/nodes/<id>`), whose attributes are those of every such folder. Boxed: a listing of
    /// 1,000,000 node folders holds 8 bytes each, not a `stat`.
    let file: FileAttributes?
}

/// A listed file's `stat`, shared by reference.
final class FileAttributes: Sendable {
    let stat: stat

    init(_ stat: stat) {
        self.stat = stat
    }
}
