import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskDrive
import DarkDiskSync
import Foundation
import Logging
import Synchronization

/// An inode number as the kernel knows it (1: the root).
package typealias Inode = UInt64

/// The file system the mount serves, without FUSE: the ID views (`/nodes`, `/thumbs`, `/avatars`) and the
/// drive (`/files`) as inodes, handles and typed operations (`lookup(parent:name:)`, `open`, `read`,
/// `write`, `flush`, `setAttributes`…) that answer values or throw. The FUSE adapter (`DarkDiskFS`) turns
/// requests into these calls and their answers into replies, and maps every error to an errno in one place
/// (`VFSErrno`); tests call them in process, with no mount and no root. rclone's `vfs/` is the model.
///
/// Operations run on the caller's thread (libfuse's workers, synchronously: index reads, one `pread` and
/// a decryption per read). A read of a node only the remote has returns at once and is answered later,
/// from the blocking pool, when its bytes have arrived (`read(handle:offset:size:answer:)`).
///
/// Locks, in the order they nest (each a `Locked`, none held while calling the store or the drive):
/// `inodes` (the inode table, also taken inside an index cursor's walk: `StoreOutline-listing.swift`),
/// `handles`, `directoryListings`, `listingsByFolder`, `driveNames`: leaves.
package final class VFS: Sendable {
    let manager: DiskManager
    /// `/files`: lookups, listings and changes of the drive, answered with what this process wrote.
    package let drive: Drive
    /// Fetches what is not stored: nodes of the remote's outline are listed and read on demand.
    let downloads: DownloadManager?
    let pins: PinKeeper?
    let health: RemoteHealth?
    /// How long a read of a node that is not stored waits for its bytes before answering `EIO`.
    let remoteTimeout: Duration
    /// Where reads answered later (after a download delivered their bytes) are decrypted and answered.
    let replies = BlockingPool.shared
    let logger: Logger
    let inodes = Locked(InodeTable())
    let handles = Locked<[UInt64: OpenFile]>([:])
    /// The folder inode and name the kernel last got each drive node by (a lookup or a listing), so a change
    /// made elsewhere (a rename, a delete) can drop that name and that folder's listing.
    let driveNames = Locked<[NodeID: (folder: Inode, name: String)]>([:])
    let nextHandle = Atomic<UInt64>(1)
    let directoryListings = Locked<[UInt64: [DirectoryEntry]]>([:])
    /// In no-opendir mode: the listings of the last few folders being read, by inode (`listing(of:offset:)`).
    let listingsByFolder = Locked(FolderListings())
    /// Where the kernel is told to drop what it cached (nil: nothing to tell, as in tests).
    let kernel = Locked<(any KernelNotices)?>(nil)
    let mountTime = Date()
    let uid = getuid()
    let gid = getgid()
    /// How long the kernel may cache names and attributes: every change is told (`StoreWatcher`)
    /// within a second, so this only bounds what a missed change could leave stale.
    let cacheTimeout: Double = 60
    /// How long the kernel may cache the drive's names and attributes: a drive entry's name and folder can
    /// change (a rename pulled from another machine), which the store watcher does not tell yet.
    let driveCacheTimeout: Double = 1

    /// Whether requests check the owner's mode bits (`check`): a single-user mount (the kernel does not
    /// check) of an owner other than root (who may read and write anything).
    let checksOwnerBits = Atomic<Bool>(false)
    /// Whether `/nodes` and `/thumbs` are the owner's only: on a mount other users may enter
    /// (`allow_other`), the ID views would otherwise show them files the drive's modes keep from them.
    let idViewsOwnerOnly = Atomic<Bool>(false)

    /// Sets how requests are checked: by this file system (`checksOwnerBits`, a single-user mount of an
    /// owner other than root) or by the kernel; `idViewsOwnerOnly` on a mount others may enter.
    package func configure(checksOwnerBits: Bool, idViewsOwnerOnly: Bool) {
        self.checksOwnerBits.store(checksOwnerBits, ordering: .relaxed)
        self.idViewsOwnerOnly.store(idViewsOwnerOnly, ordering: .relaxed)
    }

    /// Who asks: the caller's user ID (root may clear no set-ID bits by writing).
    package struct Caller: Sendable {
        package var uid: uid_t
        package init(uid: uid_t) { self.uid = uid }
    }

    /// What a lookup (or a create) hands the kernel: an inode, counted as one lookup until `forget`, its
    /// attributes (`st_ino` filled in) and how long the kernel may keep both.
    package struct Entry: Sendable {
        package let ino: Inode
        package let attributes: stat
        package let timeout: Double
    }

    /// An open handle, and whether the kernel may keep the pages it has of the inode.
    package struct Opened: Sendable {
        package let handle: UInt64
        package let keepCache: Bool
    }

    /// `downloads` nil serves only what is stored. `pins`: the keeper a pin set through the mount wakes.
    /// `health`: whether the remote answers; while it does not, reads of remote-only files fail at once.
    package init(manager: DiskManager, downloads: DownloadManager? = nil, pins: PinKeeper? = nil, health: RemoteHealth? = nil,
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

    /// Starts the drive's journal and, when `kernel` is given, a watcher that tells it what changed in the
    /// store (in any process); what to hand to `stop`.
    package func start(kernel: (any KernelNotices)?) -> StoreWatcher? {
        do {
            if try !drive.start() { logger.notice("drive files commit one transaction each (another process journals this store)") }
        } catch {
            logger.error("drive files commit one transaction each: \(error)")
        }
        guard let kernel else { return nil }
        self.kernel.withLock { $0 = kernel }
        do { return try StoreWatcher(fileSystem: self, kernel: kernel) } catch {
            logger.error("changes of the outline will not be noticed: \(error)")
            return nil
        }
    }

    /// Lets go of every handle (releasing tokens and descriptors) and waits up to a minute for the index to
    /// take the drive's journal. The watcher `start` returned is stopped first (`StoreWatcher.stop`).
    package func stop() {
        kernel.withLock { $0 = nil }
        // Released after the lock: each handle's last reference lets go of retain tokens and descriptors.
        let closed = handles.withLock { open in defer { open.removeAll() }; return Array(open.values) }
        for handle in closed { self.close(handle) }
        if !drive.stop(timeout: 60) {
            logger.error("the index did not take every drive commit in a minute; the rest waits in the journal for the store's next opening")
        }
    }

    /// How long the kernel may cache `entry`'s name and attributes.
    func cacheTimeout(for entry: FSEntry) -> Double {
        switch entry {
        case .files, .driveFolder, .driveFile, .driveLink: driveCacheTimeout
        default: cacheTimeout
        }
    }

    /// The store, once it has every change the drive took: what a request that reads it directly (a
    /// listing, an open, an attribute of an ID view's entry) must see first (`Drive.currentStore`).
    func currentStore() throws(DarkDiskError) -> DiskManager {
        try drive.currentStore()
    }
}

/// What the kernel is told when the store changes under it, so that it asks again. Each call may wait on
/// the kernel: never made from a thread a read can block (the store watcher has its own).
package protocol KernelNotices: Sendable {
    /// Drop name `name` in folder `folder`.
    func forgetName(_ name: String, in folder: Inode)
    /// Drop what the kernel keeps of inode `ino`: its attributes alone, or its attributes and its pages
    /// (a folder's: its listing).
    func forgetInode(_ ino: Inode, attributesOnly: Bool)
    /// Drop the pages of bytes [from, to) of inode `ino` and its attributes, from a thread of its own (the
    /// request that asks may hold those pages' locks until it is answered).
    func dropCachedRange(_ ino: Inode, from: UInt64, to: UInt64)
}

/// The listings kept in no-opendir mode, by folder inode, and the order they were made in.
struct FolderListings: Sendable {
    var listings: [Inode: [DirectoryEntry]] = [:]
    var order: [Inode] = []
}

/// One line of a directory listing.
package struct DirectoryEntry: Sendable {
    package let name: String
    package let ino: Inode
    /// The entry's attributes as a lookup of the name answers them (for readdirplus); nil for a folder of
    /// the fixed tree (`/nodes/<id>`), whose attributes are those of every such folder. Boxed: a listing of
    /// 1,000,000 node folders holds 8 bytes each, not a `stat`.
    package let file: FileAttributes?
}

/// A listed file's `stat`, shared by reference.
package final class FileAttributes: Sendable {
    package let stat: stat

    init(_ stat: stat) {
        self.stat = stat
    }
}
