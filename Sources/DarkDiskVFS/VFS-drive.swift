import DarkDiskStore
import DarkDiskSystem
import DarkDiskCloud
import DarkDiskDrive
#if canImport(Glibc)
import Glibc
#endif

/// The drive (`/files`): the outline's named nodes as a tree of folders, files and symbolic
/// links, with the sizes, modes and times their records give, before anything is downloaded. A drive
/// file's content is its node's data, read as `/nodes/<id>/data` is.
extension VFS {
    /// The entry a drive node is shown as.
    static func driveEntry(_ node: DriveNode) -> FSEntry {
        switch node.attributes.kind {
        case .folder: .driveFolder(node.id)
        case .file: .driveFile(node.id)
        case .symlink: .driveLink(node.id)
        }
    }

    /// The `stat` a drive entry's attributes show: owned by the mounting user, the mount's time where the
    /// drive knows none.
    func driveStat(_ attributes: DriveAttributes) -> stat {
        let type: mode_t = switch attributes.kind {
        case .folder: S_IFDIR
        case .file: S_IFREG
        case .symlink: S_IFLNK
        }
        var st = baseStat(mode: type | mode_t(attributes.permissions & 0o7777), links: nlink_t(attributes.links), size: attributes.size)
        st.st_blocks = blkcnt_t((attributes.allocated + 511) / 512)
        if let time = attributes.modified { st.st_mtim = Self.time(time) }
        if let time = attributes.changed { st.st_ctim = Self.time(time) }
        if let time = attributes.accessed { st.st_atim = Self.time(time) }
        return st
    }

    static func time(_ time: DriveTime) -> timespec {
        timespec(tv_sec: Int(time.seconds), tv_nsec: Int(time.nanoseconds))
    }

    /// What a drive entry is now (nil: gone, or no longer of that kind). A drive entry's inode serves every
    /// version of its node (programs expect a file's inode to stay as it is written), so it has no version:
    /// a drive file's pages are dropped at each open instead.
    func currentDriveEntry(_ entry: FSEntry) throws(DarkDiskError) -> (stat: stat, version: InodeTable.Version?)? {
        let current: (node: DriveNode, attributes: DriveAttributes)?
        switch entry {
        case .files:
            let top = try drive.topAttributes()
            var st = baseStat(mode: S_IFDIR | mode_t(top.permissions), links: nlink_t(try drive.topLinks()))
            if let time = top.modified { st.st_mtim = Self.time(time); st.st_ctim = Self.time(time) }
            return (st, nil)
        case .driveFolder(let id): current = try drive.attributes(of: id, kind: .folder)
        case .driveFile(let id): current = try drive.attributes(of: id, kind: .file)
        case .driveLink(let id): current = try drive.attributes(of: id, kind: .symlink)
        default: return nil
        }
        return current.map { (driveStat($0.attributes), nil) }
    }

    /// The entries of drive folder `folder` (nil: `/files`) with their attributes (`Drive.listing`).
    func listedDriveChildren(of folder: NodeID?) throws(DarkDiskError) -> [(name: String, entry: FSEntry, attributes: FileAttributes?, version: InodeTable.Version?)] {
        try drive.listing(of: folder).map { ($0.name, Self.driveEntry($0.node), FileAttributes(driveStat($0.attributes)), nil) }
    }

    /// Drive node `id` has a new version (committed here, or found by the store watcher): every handle
    /// reading it chooses its source again at its next read.
    func driveVersionChanged(_ id: NodeID) {
        let open = handles.withLock { handles in handles.values.filter { $0.entry == .driveFile(id) } }
        for file in open { file.markStale() }
    }

    /// A handle reading drive file `id` after the node got a new version reads that version (`data`) from now
    /// on, as a descriptor on a local disk reads a file rewritten in place (it read its old version for good,
    /// and once the kernel dropped its pages, a mix of both). A node deleted meanwhile keeps serving what the
    /// handle had, as a deleted file does for its holders.
    func refreshDriveHandle(_ file: OpenFile, _ id: NodeID, to data: DriveData) {
        do {
            switch data {
            case .stored(let export):
                let reader = try export.reader()
                if case .stored(_, let current) = file.source, current.header.fileID == reader.header.fileID { return }
                file.rebind(.stored(export, reader))
            case .remote(let outline):
                guard let downloads else { return }
                let key = try manager.keys.unwrap(outline.wrappedKey, for: .node(id))
                let ticket = told(downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true)))
                file.rebind(.remote(RemoteData(nodeID: id, key: key, size: outline.dataSize, ticket: ticket)))
            case .none:
                return
            }
        } catch {
            logger.error("\(file.entry.logName): cannot open its new version (\(error)); this handle keeps the one it had")
        }
    }

    /// The target of drive link `ino`.
    package func readlink(_ ino: Inode) throws -> String {
        guard case .driveLink(let id)? = inodes.withLock({ $0.entry(for: ino) }) else { throw Errno(rawValue: EINVAL) }
        guard let target = try drive.linkTarget(id) else { throw Errno(rawValue: ENOENT) }
        return target
    }
}
