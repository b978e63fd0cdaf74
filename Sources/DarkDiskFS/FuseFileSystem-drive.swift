import CFuse3
import DarkDisk
import DarkDiskCloud
#if canImport(Glibc)
import Glibc
#endif

/// The drive (`/files`): the outline's named nodes as a tree of folders, files and symbolic
/// links, with the sizes, modes and times their records give, before anything is downloaded. A drive
/// file's content is its node's data, read as `/nodes/<id>/data` is.
extension FuseFileSystem {
    /// The entry a drive node is shown as.
    static func driveEntry(_ node: DriveNode) -> FSEntry {
        switch node.attributes.kind {
        case .folder: .driveFolder(node.id)
        case .file: .driveFile(node.id)
        case .symlink: .driveLink(node.id)
        }
    }

    /// The entry named `name` in drive folder `folder` (nil: `/files`). Usually one node holds the name; when
    /// several do, the earliest made keeps it, and a later one is found by its suffixed name (`DriveNames`).
    func driveChild(of folder: NodeID?, named name: String) throws(DarkDiskError) -> FSEntry? {
        let holders = try manager.driveChildren(of: folder, named: name)
        if let first = holders.min(by: { ($0.created, $0.id.rawValue) < ($1.created, $1.id.rawValue) }) {
            return Self.driveEntry(first)
        }
        guard let id = DriveNames.suffixID(of: name), let node = try manager.driveNode(id), node.parentID == folder else { return nil }
        let siblings = try manager.driveChildren(of: folder, named: node.name)
        let shown = DriveNames.shown(siblings.map { DriveNames.Child(id: $0.id, name: $0.name, created: $0.created) })
        return shown.contains { $0.id == id && DriveNames.same($0.name, name) } ? Self.driveEntry(node) : nil
    }

    /// The entry named `name` in drive folder `folder` and what a lookup answers of it, from one index read
    /// (`DiskManager.driveListedChildren`: the node with its data), when that read says all: a file or a link
    /// with no writer here, while no commit waits for the index. Nil when the name needs more (a folder, a
    /// suffixed name, a file being written, commits in the journal): the caller then asks `driveChild` and
    /// `current`.
    func listedDriveChild(of folder: NodeID, named name: String) throws(DarkDiskError) -> (entry: FSEntry, stat: stat)? {
        // (A writer that goes after this mark makes `driveStat` read its data again.)
        let removals = writers.withLock { $0.removals }
        // Only while nothing waits in the journal: a commit journaled before the mark (its writer gone) and
        // indexed between this read and a look at the journal after it would leave the read behind it.
        guard manager.driveCommitsIdle else { return nil }
        let holders = try manager.driveListedChildren(of: folder, named: name)
        guard let first = holders.min(by: { ($0.node.created, $0.node.id.rawValue) < ($1.node.created, $1.node.id.rawValue) }) else { return nil }
        let entry = Self.driveEntry(first.node)
        switch entry {
        case .driveFile(let id), .driveLink(let id):
            guard manager.driveCommitsIdle || !manager.hasPendingDriveCommit(id), writers.withLock({ $0[id] }) == nil else { return nil }
            guard let st = try driveStat(first.node, listed: (first, removals)) else { return nil }
            return (entry, st)
        default:
            return nil
        }
    }

    /// The entries of drive folder `folder` (nil: `/files`) by the names they show.
    func driveChildren(of folder: NodeID?) throws(DarkDiskError) -> [(String, FSEntry)] {
        let nodes = try manager.driveChildren(of: folder)
        var byID: [NodeID: DriveNode] = [:]
        for node in nodes { byID[node.id] = node }
        return DriveNames.shown(nodes.map { DriveNames.Child(id: $0.id, name: $0.name, created: $0.created) }).compactMap { shown in
            byID[shown.id].map { (shown.name, Self.driveEntry($0)) }
        }
    }

    /// What a drive entry is now (nil: gone, or no longer of that kind). A file's size and blocks are those
    /// of its staged content while it is open for writing, else of its node's data (a file made but never
    /// committed, by a process that died, is empty); its mode and times come from the node's record. A drive
    /// entry's inode serves every version of its node (programs expect a file's inode to stay as it is
    /// written), so it has no version: a drive file's pages are dropped at each open instead.
    func currentDriveEntry(_ entry: FSEntry) throws(DarkDiskError) -> (stat: stat, version: InodeTable.Version?)? {
        switch entry {
        case .files:
            return (baseStat(mode: S_IFDIR | 0o755, links: 2), nil)
        case .driveFolder(let id):
            let (known, generation) = folderRecords.record(id)
            if let known { return try driveStat(known).map { ($0, nil) } }
            guard let node = try manager.driveNode(id), Self.driveEntry(node) == entry else { return nil }
            folderRecords.remember(node, ifStill: generation)
            return try driveStat(node).map { ($0, nil) }
        case .driveFile(let id), .driveLink(let id):
            // A file open for writing here: its record as the writer knows it (read once, then kept).
            let writer = if case .driveFile = entry { writers.withLock { $0[id] } } else { DriveWriter?.none }
            let (known, generation) = writer?.knownRecord ?? (nil, 0)
            if let known { return try driveStat(known).map { ($0, nil) } }
            // (The mark before the wait: a writer that goes after it makes `driveStat` read its data again.)
            let removals = writers.withLock { $0.removals }
            try settle(id)
            guard let listed = try manager.driveListedNode(id), Self.driveEntry(listed.node) == entry else { return nil }
            writer?.remember(listed.node, ifStill: generation)
            return try driveStat(listed.node, listed: (listed, removals)).map { ($0, nil) }
        default:
            return nil
        }
    }

    /// The `stat` of a drive node as its entry shows it (nil: a link without a target). `listed`: the node as
    /// a folder's listing read it, with its data's state, and the count of writers gone when it was read
    /// (`DriveWriterTable.removals`); else, or if a writer went since, that is read here.
    func driveStat(_ node: DriveNode, listed: (node: DriveListedNode, removals: UInt64)? = nil) throws(DarkDiskError) -> stat? {
        switch node.attributes.kind {
        case .folder:
            return withAttributes(baseStat(mode: S_IFDIR, links: 2), of: node)
        case .symlink:
            guard let target = node.attributes.target else { return nil }
            return withAttributes(baseStat(mode: S_IFLNK, links: 1, size: UInt64(target.utf8.count)), of: node)
        case .file:
            var st: stat
            let writer = writers.withLock { $0[node.id] }
            if let writer {
                let size = writer.content.size
                st = baseStat(mode: S_IFREG, links: 1, size: size)
                st.st_blocks = blkcnt_t((size + 511) / 512)
            } else if let listed, writers.withLock({ $0.removals }) == listed.removals {
                let listed = listed.node
                if let data = listed.data {
                    st = attributes(of: data)
                } else {
                    st = baseStat(mode: S_IFREG, links: 1, size: listed.remoteDataSize ?? 0)
                }
            } else {
                // No writer now: what one wrote is committed, in the journal or the index; read after the index
                // has it (else a writer that went since the caller looked would leave its size behind, and a
                // writer that went since a listing was read too: the kernel would append at an old end).
                try settle(node.id)
                if let data = try manager.driveFileData(node.id) {
                    st = data.data.map(attributes(of:)) ?? baseStat(mode: S_IFREG, links: 1, size: data.remoteDataSize ?? 0)
                } else {
                    st = baseStat(mode: S_IFREG, links: 1)
                }
            }
            st.st_mode = S_IFREG
            st = withAttributes(st, of: node)
            if let pending = writer?.content.pendingAttributes {
                if let mode = pending.mode { st.st_mode = S_IFREG | mode_t(mode & 0o7777) }
                if let change = pending.modified {
                    st.st_mtim = timespec(tv_sec: Int(change.seconds), tv_nsec: Int(change.nanoseconds))
                }
                // Written or changed since its last commit: then.
                if let change = pending.changed {
                    let time = timespec(tv_sec: Int(change.seconds), tv_nsec: Int(change.nanoseconds))
                    if (time.tv_sec, time.tv_nsec) > (st.st_ctim.tv_sec, st.st_ctim.tv_nsec) { st.st_ctim = time }
                }
            }
            return st
        }
    }

    /// A drive folder's entries with their attributes, from the one query that lists the folder with its
    /// files' data (`driveListing`).
    func listedDriveChildren(of folder: NodeID?) throws(DarkDiskError) -> [(name: String, entry: FSEntry, attributes: FileAttributes?, version: InodeTable.Version?)] {
        // (A writer that went before this mark committed into the journal: the listing reads after the index has it.)
        let removals = writers.withLock { $0.removals }
        try waitForDriveCommits()
        let nodes = try manager.driveListing(of: folder)
        var byID: [NodeID: DriveListedNode] = [:]
        byID.reserveCapacity(nodes.count)
        for listed in nodes { byID[listed.node.id] = listed }
        var listed: [(name: String, entry: FSEntry, attributes: FileAttributes?, version: InodeTable.Version?)] = []
        listed.reserveCapacity(nodes.count)
        for shown in DriveNames.shown(nodes.map { DriveNames.Child(id: $0.node.id, name: $0.node.name, created: $0.node.created) }) {
            guard let entry = byID[shown.id], let st = try driveStat(entry.node, listed: (entry, removals)) else { continue }
            listed.append((shown.name, Self.driveEntry(entry.node), FileAttributes(st), nil))
        }
        return listed
    }

    /// `st` with the permission bits and modification time of a node's record (the change time follows the
    /// modification; a record of unknown time keeps the times `st` has).
    /// `st` with `node`'s mode, its modification time and its change time (`ctime`: when the drive last
    /// changed it; its modification time on a node older than the index's change times).
    private func withAttributes(_ st: stat, of node: DriveNode) -> stat {
        var st = st
        let attributes = node.attributes
        st.st_mode = (st.st_mode & S_IFMT) | mode_t(attributes.mode & 0o7777)
        if let seconds = attributes.modifiedSeconds {
            let time = timespec(tv_sec: Int(seconds), tv_nsec: Int(attributes.modifiedNanoseconds))
            st.st_mtim = time
            st.st_ctim = time
        }
        if let changed = node.changed, changed.isFinite, abs(changed) < 1e15 {
            let seconds = changed.rounded(.down)
            st.st_ctim = timespec(tv_sec: Int(seconds), tv_nsec: min(999_999_999, Int((changed - seconds) * 1e9)))
        }
        return st
    }

    /// Forgets what this daemon keeps of the records of `ids` (a folder's, a writer's), whose nodes changed.
    func forgetRecords(_ ids: NodeID...) {
        folderRecords.forget(ids)
        writers.withLock { table in for id in ids { table[id]?.forgetRecord() } }
    }

    /// Drive node `id` has a new version (committed here, or found by the store watcher): every handle
    /// reading it chooses its source again at its next read.
    func driveVersionChanged(_ id: NodeID) {
        let open = handles.withLock { handles in handles.values.filter { $0.entry == .driveFile(id) } }
        for file in open { file.markStale() }
    }

    /// A handle reading drive file `id` after the node got a new version reads that version from now on, as
    /// a descriptor on a local disk reads a file rewritten in place (it read its old version for good, and
    /// once the kernel dropped its pages, a mix of both). A node deleted meanwhile keeps serving what the
    /// handle had, as a deleted file does for its holders.
    func refreshDriveHandle(_ file: OpenFile, _ id: NodeID) {
        do {
            if let export = try manager.nodeFile(id, kind: .data) {
                let reader = try export.reader()
                if case .stored(_, let current) = file.source, current.header.fileID == reader.header.fileID { return }
                file.rebind(.stored(export, reader))
            } else if let downloads, let outline = try manager.outlineEntry(id) {
                let key = try manager.unwrapKey(outline.wrappedKey, for: .node(id))
                let ticket = told(downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true)))
                file.rebind(.remote(RemoteData(nodeID: id, key: key, size: outline.dataSize, ticket: ticket)))
            }
        } catch {
            logger.error("\(file.entry.logName): cannot open its new version (\(error)); this handle keeps the one it had")
        }
    }

    /// Answers `readlink` of a drive link with its target.
    func readlink(_ reply: FuseReply, ino: fuse_ino_t) {
        guard case .driveLink(let id)? = inodes.withLock({ $0.entry(for: ino) }) else { reply.error(EINVAL); return }
        do {
            guard let target = try manager.driveNode(id)?.attributes.target else { reply.error(ENOENT); return }
            reply.link(target)
        } catch {
            reply.error(FuseErrno.from(error))
        }
    }
}
