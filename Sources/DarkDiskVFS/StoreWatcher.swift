import DarkDiskStore
import Dispatch
import Foundation
import Logging
import Synchronization
import DarkDiskSync

/// Watches the store while the mount runs and tells the kernel to forget what it cached of each node or
/// avatar that changed in any process (a `pull` or an import in the CLI, a download or an eviction in this
/// daemon): the names under `/nodes`, `/thumbs` and `/avatars`, so the next lookup finds the version that
/// is current now, and the attributes of the inodes they led to. The changes come from the index's change
/// table (`DiskManager.entryChanges(after:)`): each check costs one read and the number of changes, never
/// the size of the outline, and holds nothing of it in memory. Because every change is told, the kernel
/// may keep names and attributes for `VFS.cacheTimeout` instead of asking again every second.
///
/// It never invalidates a file's pages: an invalidation waits for the lock of every page, including one
/// that a read waiting on the remote holds. Blocked there, this thread could not die with the daemon, and
/// the connection (and every reader waiting on it) would hang until aborted by hand. An inode of the ID
/// view serves one version for good (`InodeTable`), so its pages stay true; a drive file's inode serves
/// every version of its node, and the kernel drops its pages itself: at every open (`VFS.open`),
/// and, for a file open meanwhile, at its next read, which asks for the attributes this drops and finds
/// them changed (libfuse's `auto_inval_data`, on by default), in the reader's own thread. A folder's
/// pages (its cached listing) come from the index, never from the remote, and are dropped.
package final class StoreWatcher: Sendable {
    private let fileSystem: VFS
    private let kernel: any KernelNotices
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    /// The newest change row told to the kernel.
    private let seen: Atomic<Int64>

    /// Checks every `interval` on a thread of its own (a notify call may wait on the kernel: never on a FUSE
    /// worker or the concurrency pool).
    init(fileSystem: VFS, kernel: any KernelNotices, interval: DispatchTimeInterval = .seconds(1)) throws(DarkDiskError) {
        self.fileSystem = fileSystem
        self.kernel = kernel
        seen = Atomic(try fileSystem.manager.newestEntryChange())
        Thread.detachNewThread { [self] in
            while !stopped.load(ordering: .acquiring) {
                _ = wake.wait(timeout: .now() + interval)
                if stopped.load(ordering: .acquiring) { break }
                check()
            }
            finished.signal()
        }
    }

    /// Stops watching and waits for the watcher's thread; call before the kernel's session goes. A second call
    /// returns at once.
    package func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wake.signal()
        finished.wait()
    }

    private func check() {
        do {
            // The commits of this mount's own writers only under `/nodes`: `/files` showed them to the kernel.
            let (changes, ownCommits, newest) = try fileSystem.manager.entryChanges(after: seen.load(ordering: .relaxed),
                                                                                    skippingOwnCommits: true)
            seen.store(newest, ordering: .relaxed)
            for id in ownCommits { invalidate(Self.nodeViewNames(id), files: Self.nodeViewFiles(id)) }
            guard !changes.isEmpty else { return }
            var nodes: [NodeID] = []
            var avatars: [(UserID, IdentityID)] = []
            for change in changes {
                switch change {
                case .node(let id): nodes.append(id)
                case .avatar(let user, let identity): avatars.append((user, identity))
                }
            }
            // Their records in one read, not one read per node (a `tar x` changes thousands a second).
            let current = (try? fileSystem.manager.driveNodes(nodes)) ?? [:]
            for id in nodes { invalidate(node: id, current: current[id]) }
            for (user, identity) in avatars { invalidate(avatar: user, identity) }
            let named = nodes.count <= 10 ? " (" + nodes.map(\.rawValue).sorted().joined(separator: ", ") + ")" : ""
            fileSystem.logger.info("the store changed: \(nodes.count) nodes\(named) and \(avatars.count) avatars changed, appeared or went")
        } catch {
            fileSystem.logger.error("cannot read the store's changes: \(error)")
        }
    }

    /// Drops an avatar's names (its user's folder, the avatar in it) and the attributes of its file.
    private func invalidate(avatar user: UserID, _ identity: IdentityID) {
        invalidate([(FSEntry.avatars, user.rawValue, .avatarDirectory(user)), (.avatarDirectory(user), identity.rawValue, .avatarFile(user, identity))],
                   files: [.avatarFile(user, identity)])
    }

    /// Drops a node's names (its folder, its files, its thumbnail) and the attributes of its files; as a
    /// drive entry, the name the kernel knows it by and the one it has now (which also drops the listings
    /// of both folders, which the kernel keeps in no-opendir mode) and its attributes (a drive file's pages
    /// then go at its next read or open: see above).
    ///
    /// A drive folder still where the kernel knows it keeps its name: dropping it would unhash the folder's
    /// dentry, and every process working in it would lose its working directory (`getcwd`: ENOENT, which
    /// failed `git gc` in a clone whose folder had just been uploaded). Its attributes and listing go.
    private func invalidate(node id: NodeID, current node: DriveNode?) {
        var names = Self.nodeViewNames(id)
        // Read the record again when next asked (a pull may have changed its mode or time), and the data at
        // its current version through the handles open on it.
        fileSystem.drive.forgetRecords([id])
        fileSystem.driveVersionChanged(id)
        let known = fileSystem.driveNames.withLock { $0[id] }
        var folderStays = false
        var knownNameDropped = false
        var newInFolder: Inode?
        if let node {
            let folder = node.parentID.map(FSEntry.driveFolder) ?? .files
            let folderIno = fileSystem.inodes.withLock { $0.existingInode(for: folder) }
            if node.attributes.kind == .folder, let known, DriveNames.same(known.name, node.name), folderIno == known.folder {
                folderStays = true
            } else {
                // (Whatever entry the kernel has under this name: another node may have held it.)
                names.append((folder, node.name, nil))
                knownNameDropped = folderIno != nil && known?.folder == folderIno && known.map { DriveNames.same($0.name, node.name) } == true
            }
            // A name the kernel does not know there (pulled, or moved there elsewhere): dropping the name alone
            // leaves the folder's cached listing without it (the kernel resets a listing when a name it has
            // changes, not for a new one), so its pages go.
            if let folderIno, known?.folder != folderIno || known.map({ DriveNames.same($0.name, node.name) }) != true { newInFolder = folderIno }
        }
        invalidate(names, files: Self.nodeViewFiles(id))
        if let known, !folderStays {
            if !knownNameDropped {
                kernel.forgetName(known.name, in: known.folder)
            }
            // Gone from there: a listing read without lookups holds the name with no entry to drop.
            if node == nil || newInFolder != nil { kernel.forgetInode(known.folder, attributesOnly: false) }
        }
        if let newInFolder { kernel.forgetInode(newInFolder, attributesOnly: false) }
        for entry in [FSEntry.driveFile(id), .driveFolder(id), .driveLink(id)] {
            guard let ino = fileSystem.inodes.withLock({ $0.existingInode(for: entry) }) else { continue }
            if case .driveFile = entry { kernel.forgetInode(ino, attributesOnly: true) } else { kernel.forgetInode(ino, attributesOnly: false) }
        }
    }

    /// A node's names in the ID view (`/nodes/<id>` and its files, `/thumbs/<id>`), each with the entry it
    /// names: the kernel holds no such name unless it was given that entry.
    private static func nodeViewNames(_ id: NodeID) -> [(FSEntry, String, FSEntry?)] {
        [(.nodes, id.rawValue, .nodeDirectory(id)), (.thumbs, id.rawValue, .thumb(id)),
         (.nodeDirectory(id), "data", .nodeFile(id, .data)), (.nodeDirectory(id), "metadata", .nodeFile(id, .metadata)),
         (.nodeDirectory(id), "thumbnail", .nodeFile(id, .thumbnail))]
    }

    /// A node's files in the ID view.
    private static func nodeViewFiles(_ id: NodeID) -> [FSEntry] {
        [.nodeFile(id, .data), .nodeFile(id, .metadata), .nodeFile(id, .thumbnail), .thumb(id)]
    }

    /// Drops `names` (folder, name, and the entry the name leads to when only that one can be there: a name the
    /// kernel was never given that entry for is not in its cache, and telling it costs a failed system call)
    /// and the attributes of `files`.
    private func invalidate(_ names: [(FSEntry, String, FSEntry?)], files: [FSEntry]) {
        for (parent, name, child) in names {
            let (folder, childKnown) = fileSystem.inodes.withLock { table in
                (table.existingInode(for: parent), child.map { table.existingInode(for: $0) ?? table.newestInode(for: $0) != nil } ?? true)
            }
            guard let folder, childKnown else { continue }
            kernel.forgetName(name, in: folder)
        }
        // Attributes only (a negative offset): the size of a file's blocks changes with a download or an
        // eviction while its inode stays.
        for file in files {
            guard let ino = fileSystem.inodes.withLock({ $0.newestInode(for: file) }) else { continue }
            kernel.forgetInode(ino, attributesOnly: true)
        }
    }
}
