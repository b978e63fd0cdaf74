import DarkDiskStore
import DarkDiskSystem
import DarkDiskCrypto
import DarkDiskDrive
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension VFS {
    /// The entry named `name` in folder `parent`, counted as one lookup of its inode (the caller `forget`s
    /// it if the kernel does not take it).
    package func lookup(parent: Inode, name: String) throws -> Entry {
        // (A name no entry can have: the kernel passes up to 1,024 bytes.)
        guard name.utf8.count <= DriveNames.maximumLength else { throw Errno(rawValue: ENAMETOOLONG) }
        guard let parentEntry = inodes.withLock({ $0.entry(for: parent) }) else { throw Errno(rawValue: ENOENT) }
        try check(parentEntry, .execute)
        do {
            let found: (entry: FSEntry, current: (stat: stat, version: InodeTable.Version?))
            switch parentEntry {
            case .files, .driveFolder:
                guard let child = try drive.lookup(name, in: parentEntry.driveNode) else { throw Errno(rawValue: ENOENT) }
                found = (Self.driveEntry(child.node), (driveStat(child.attributes), nil))
            default:
                // (The ID views show the drive's nodes too: what it took must be in the store first.)
                _ = try currentStore()
                guard let entry = try child(of: parentEntry, named: name), let current = try current(entry) else { throw Errno(rawValue: ENOENT) }
                found = (entry, current)
            }
            return lookedUpEntry(found.entry, found.current, in: parent, named: name)
        } catch let error as Errno {
            throw error
        } catch {
            logger.error("lookup of a name in \(folderLogName(parent)): \(error)")
            throw error
        }
    }

    /// The kernel let go of `count` references to `ino`.
    package func forget(_ ino: Inode, count: UInt64) {
        inodes.withLock { $0.forget(ino, count: count) }
    }

    /// The kernel took references to `inodes` (the entries of a listing with attributes).
    package func lookedUp(_ inodes: [Inode]) {
        guard !inodes.isEmpty else { return }
        self.inodes.withLock { table in for ino in inodes { table.lookedUp(ino) } }
    }

    /// The attributes of `ino` and how long the kernel may keep them. `handle`: the open file the kernel asks
    /// through (`fstat`, and the size check of a read), if any.
    package func attributes(of ino: Inode, handle: UInt64? = nil) throws -> (stat: stat, timeout: Double) {
        guard let key = inodes.withLock({ $0.key(for: ino) }) else { throw Errno(rawValue: ENOENT) }
        var st: stat
        if let current = try current(key.entry), current.version == key.version {
            st = current.stat
        } else if let open = openFile(ino: ino, handle: handle) {
            // A version that handles still read (the file was replaced or deleted meanwhile): it stays
            // readable, at its own size, to its last close.
            st = attributes(ofOpen: open)
        } else {
            // Replaced: the name now leads to another inode (ESTALE makes the kernel look it up again);
            // deleted: gone.
            throw Errno(rawValue: try current(key.entry) == nil ? ENOENT : ESTALE)
        }
        st.st_ino = __ino_t(ino)
        return (st, cacheTimeout(for: key.entry))
    }

    /// Opens folder `ino`: its listing is made now and kept with the handle until `releaseDirectory`. (Where
    /// the kernel lists without opening folders, FUSE's no-opendir mode, it asks `listing(of:offset:)` instead.)
    package func openDirectory(_ ino: Inode) throws -> UInt64 {
        let entry = try mayList(ino)
        do {
            let listing = try makeListing(of: entry, ino: ino)
            let handle = nextHandle.wrappingAdd(1, ordering: .relaxed).oldValue
            directoryListings.withLock { $0[handle] = listing }
            return handle
        } catch {
            logger.error("listing: \(error)")
            throw error
        }
    }

    /// Throws unless folder `ino` may be listed (`ENOTDIR`, `EACCES`); the folder.
    @discardableResult
    package func mayList(_ ino: Inode) throws -> FSEntry {
        guard let entry = inodes.withLock({ $0.entry(for: ino) }), entry.isDirectory else { throw Errno(rawValue: ENOTDIR) }
        try check(entry, .read)
        return entry
    }

    /// The listing an open folder handle keeps.
    package func listing(ofHandle handle: UInt64) throws(Errno) -> [DirectoryEntry] {
        guard let kept = directoryListings.withLock({ $0[handle] }) else { throw Errno(rawValue: EBADF) }
        return kept
    }

    /// Lets go of an open folder's listing.
    package func releaseDirectory(_ handle: UInt64) {
        _ = directoryListings.withLock { $0.removeValue(forKey: handle) }
    }

    /// How long the kernel may keep the names and attributes a listing of folder `ino` gives.
    package func listingTimeout(of ino: Inode) -> Double {
        inodes.withLock { $0.entry(for: ino) }.map(cacheTimeout(for:)) ?? driveCacheTimeout
    }

    /// The attributes a listing gives a folder of the fixed tree (`/nodes/<id>`).
    package var folderAttributes: stat { baseStat(mode: S_IFDIR | 0o755, links: 2) }

    /// A folder's listing: `.`, `..`, then its children with their inodes (a file's number is its current
    /// version's, as a lookup of the name would give it) and attributes.
    private func makeListing(of entry: FSEntry, ino: Inode) throws(DarkDiskError) -> [DirectoryEntry] {
        // (The ID views show the drive's nodes too: what it took must be in the store first. A drive folder's
        // listing lets in what it must see itself, `Drive.listing(of:)`.)
        switch entry {
        case .files, .driveFolder: break
        default: _ = try currentStore()
        }
        let parentIno = inodes.withLock { $0.inode(for: entry.parent) }
        var listing = [DirectoryEntry(name: ".", ino: ino, file: nil), DirectoryEntry(name: "..", ino: parentIno, file: nil)]
        if case .nodes = entry {
            // Up to millions of folders without attributes of their own: straight from the index's cursor into
            // the listing (an array of children first doubled the daemon's peak memory).
            try manager.outline.forEachListedNodeID { id in
                let child = inodes.withLock { $0.inode(for: .nodeDirectory(id)) }
                listing.append(DirectoryEntry(name: id.rawValue, ino: child, file: nil))
            }
            return listing
        }
        let children = try listedChildren(of: entry)
        listing.reserveCapacity(children.count + 2)
        // One lock for all.
        inodes.withLock { table in
            for child in children {
                listing.append(DirectoryEntry(name: child.name, ino: table.inode(for: child.entry, version: child.version), file: child.attributes))
            }
        }
        if case .files = entry { rememberDriveNames(children, in: ino) }
        if case .driveFolder = entry { rememberDriveNames(children, in: ino) }
        return listing
    }

    private func rememberDriveNames(_ children: [(name: String, entry: FSEntry, attributes: FileAttributes?, version: InodeTable.Version?)], in folder: Inode) {
        driveNames.withLock { names in
            for child in children { if let id = child.entry.driveNode { names[id] = (folder, child.name) } }
        }
    }

    /// The listing a `readdir` at `offset` of folder `ino` reads in no-opendir mode: made anew at offset 0 (a
    /// new pass: `ls` after a change sees it) and kept for the rest of that pass, so a folder of a million
    /// names is listed once per pass, not once per batch. A few folders' listings are kept at a time; one
    /// is dropped when its pass reaches the end.
    package func listing(of ino: Inode, offset: Int64) throws -> [DirectoryEntry] {
        // (No opening came: a listing's first batch is where reading it is allowed or not.)
        if offset == 0 { try check(ino, .read) }
        if offset > 0, let kept = listingsByFolder.withLock({ $0.listings[ino] }) { return kept }
        guard let entry = inodes.withLock({ $0.entry(for: ino) }), entry.isDirectory else {
            throw DarkDiskError(.notFound, "no folder with inode \(ino)")
        }
        let listing = try makeListing(of: entry, ino: ino)
        listingsByFolder.withLock { kept in
            kept.listings[ino] = listing
            kept.order.removeAll { $0 == ino }
            kept.order.append(ino)
            while kept.order.count > 16 { kept.listings[kept.order.removeFirst()] = nil }
        }
        return listing
    }

    /// The end of a pass over folder `ino`'s listing (no-opendir mode): the next one starts at offset 0 with a
    /// listing made anew.
    package func listingPassEnded(_ ino: Inode) {
        listingsByFolder.withLock { kept in
            kept.listings[ino] = nil
            kept.order.removeAll { $0 == ino }
        }
    }

    /// The space of the disk that holds the store.
    package func statfs() throws(Errno) -> statvfs {
        // fstatvfs: Swift cannot call `statvfs()`, whose name it resolves to the struct.
        let folder = try OwnedDescriptor.open(manager.location.dataDirectory, O_RDONLY | O_DIRECTORY)
        var st = statvfs()
        guard fstatvfs(folder.rawValue, &st) == 0 else { throw Errno.current }
        return st
    }

    /// The entry called `name` inside `parent`, if the store has it or the remote's outline lists it. A file
    /// inside a node's folder (or in /thumbs) is returned by its name alone: `current` then says whether it
    /// exists, in the same one index read that gives its attributes.
    func child(of parent: FSEntry, named name: String) throws(DarkDiskError) -> FSEntry? {
        switch parent {
        case .root:
            return ["nodes": .nodes, "thumbs": .thumbs, "avatars": .avatars, "files": .files][name]
        case .files, .driveFolder:
            return try drive.lookup(name, in: parent.driveNode).map { Self.driveEntry($0.node) }
        case .nodes:
            guard let id = try? NodeID(name), try manager.outline.nodeState(id).exists else { return nil }
            return .nodeDirectory(id)
        case .nodeDirectory(let id):
            guard let kind = FileKind(rawValue: name), kind != .avatar else { return nil }
            return .nodeFile(id, kind)
        case .thumbs:
            guard let id = try? NodeID(name) else { return nil }
            return .thumb(id)
        case .avatars:
            guard let user = try? UserID(name) else { return nil }
            if try manager.files.storedAvatars(user).isEmpty, try manager.outline.avatars(user).isEmpty { return nil }
            return .avatarDirectory(user)
        case .avatarDirectory(let user):
            guard let identity = try? IdentityID(name) else { return nil }
            return .avatarFile(user, identity)
        case .nodeFile, .thumb, .avatarFile, .driveFile, .driveLink:
            return nil
        }
    }

    /// A folder's children with what a lookup of each would answer (a file's attributes and version), read
    /// in as few index reads as the folder allows: one for a node's folder, two for `/nodes` (which holds
    /// only folders), one per entry elsewhere. Files that went meanwhile are left out.
    func listedChildren(of entry: FSEntry) throws(DarkDiskError) -> [(name: String, entry: FSEntry, attributes: FileAttributes?, version: InodeTable.Version?)] {
        switch entry {
        case .nodeDirectory(let id):
            let state = try manager.outline.nodeState(id)
            return state.kinds.compactMap { kind in
                guard let now = current(section: kind, of: state) else { return nil }
                return (kind.rawValue, .nodeFile(id, kind), FileAttributes(now.stat), now.version)
            }
        case .nodes:
            // Folders only, and up to millions of them: no attributes of their own, and no detour through `children`.
            return try manager.outline.listedNodeIDs().map { ($0.rawValue, .nodeDirectory($0), nil, nil) }
        case .files:
            return try listedDriveChildren(of: nil)
        case .driveFolder(let id):
            return try listedDriveChildren(of: id)
        default:
            break
        }
        var listed: [(name: String, entry: FSEntry, attributes: FileAttributes?, version: InodeTable.Version?)] = []
        for (name, child) in try children(of: entry) {
            if case .driveFolder = child {
                // A drive folder has its own mode and time.
                if let now = try current(child) { listed.append((name, child, FileAttributes(now.stat), nil)) }
            } else if child == .nodes || child == .thumbs {
                // Their own mode (owner-only on a mount others may enter).
                if let now = try current(child) { listed.append((name, child, FileAttributes(now.stat), nil)) }
            } else if child.isDirectory {
                listed.append((name, child, nil, nil))
            } else if let now = try current(child) {
                listed.append((name, child, FileAttributes(now.stat), now.version))
            }
        }
        return listed
    }

    /// The named children of a folder.
    func children(of entry: FSEntry) throws(DarkDiskError) -> [(String, FSEntry)] {
        switch entry {
        case .root:
            return [("avatars", .avatars), ("files", .files), ("nodes", .nodes), ("thumbs", .thumbs)]
        case .files, .driveFolder:
            return try drive.children(of: entry.driveNode).map { ($0.name, Self.driveEntry($0.node)) }
        case .nodes:
            return try manager.outline.listedNodeIDs().map { ($0.rawValue, .nodeDirectory($0)) }
        case .nodeDirectory(let id):
            return try manager.outline.nodeState(id).kinds.map { ($0.rawValue, .nodeFile(id, $0)) }
        case .thumbs:
            return try manager.outline.listedNodeIDs(having: .thumbnail).map { ($0.rawValue, .thumb($0)) }
        case .avatars:
            let users = Set(try manager.files.storedAvatarUsers()).union(try manager.outline.avatars().map(\.userID))
            return users.sorted().map { ($0.rawValue, .avatarDirectory($0)) }
        case .avatarDirectory(let user):
            var identities = Set(try manager.files.storedAvatars(user).compactMap { try? IdentityID($0.identityID) })
            identities.formUnion(try manager.outline.avatars(user).map(\.identityID))
            return identities.sorted().map { ($0.rawValue, .avatarFile(user, $0)) }
        case .nodeFile, .thumb, .avatarFile, .driveFile, .driveLink:
            return []
        }
    }

    /// What an entry is now: its `stat` (st_ino filled in by the caller) and, for a file, the version it
    /// serves; nil when it no longer exists. One index read decides both, so they always go together.
    func current(_ entry: FSEntry) throws(DarkDiskError) -> (stat: stat, version: InodeTable.Version?)? {
        switch entry {
        case .files, .driveFolder, .driveFile, .driveLink: return try currentDriveEntry(entry)
        default: break
        }
        if entry.isDirectory {
            // Writable for the owner only so that `setfattr` reaches us; every write of data answers EROFS.
            let ownerOnly = (entry == .nodes || entry == .thumbs) && idViewsOwnerOnly.load(ordering: .relaxed)
            return (baseStat(mode: S_IFDIR | (ownerOnly ? 0o700 : 0o755), links: 2), nil)
        }
        // Stored, or only in the remote (its size from the outline, no blocks on this disk).
        if case .avatarFile(let user, let identity) = entry {
            if let file = try manager.files.storedAvatar(user, identityID: identity) { return (attributes(of: file), .stored(file.fileID)) }
            guard let listed = try manager.outline.avatar(user, identityID: identity) else { return nil }
            return (baseStat(mode: S_IFREG | 0o644, links: 1, size: listed.plaintextSize), .listed(listed.wrappedKey))
        }
        guard let (id, kind) = entry.nodeSection else { return nil }
        return current(section: kind, of: try manager.outline.nodeState(id))
    }

    /// What one section of a node is now, from the node's state as one index read gave it.
    /// A section of a node the drive names carries the node's permission bits (a file the drive keeps at
    /// 0600 is 0600 here too).
    func current(section kind: FileKind, of state: NodeState) -> (stat: stat, version: InodeTable.Version?)? {
        let mode = state.fileMode.map { mode_t($0 & 0o777) } ?? 0o644
        if let file = state.stored(kind) {
            var st = attributes(of: file)
            st.st_mode = S_IFREG | mode
            return (st, version(ofStored: kind, fileID: file.fileID, format: file.format, cloudFileID: file.cloudFileID,
                                plaintextSize: file.plaintextSize, outline: state.outline))
        }
        guard let outline = state.outline, outline.has(kind) else { return nil }
        return (baseStat(mode: S_IFREG | mode, links: 1, size: outline.plaintextSize(of: kind)), .remote(outline.cloudETag))
    }

    /// The attributes of a stored file: its plaintext size, the blocks it takes here, its times.
    func attributes(of file: StoredFile) -> stat {
        var st = baseStat(mode: S_IFREG | 0o644, links: 1, size: file.plaintextSize)
        st.st_blocks = blkcnt_t((file.storedSize + 511) / 512)
        let modified = timespec(tv_sec: Int(file.modified.timeIntervalSince1970), tv_nsec: 0)
        st.st_mtim = modified
        st.st_ctim = modified
        st.st_atim = timespec(tv_sec: Int(file.lastAccess.timeIntervalSince1970), tv_nsec: 0)
        return st
    }

    /// The version a stored file of `entry` serves. A node's data downloaded from the remote (a whole cloud
    /// file whose header has the file ID the record names: `StoredFile.isRemoteVersion`; a version the drive
    /// wrote is its own until uploaded), or a section fetched from it (of the size the record gives), is the remote's version at the
    /// outline's ETag, the same as before it was downloaded and after it is evicted: the inode (and the
    /// kernel's pages) stays while a busy pool downloads and evicts it again and again (a new inode each
    /// time made opens fail with ESTALE twice in a row). Anything else stored is its own version.
    func version(ofStored entry: FSEntry, fileID: Int64, format: CryptoFileFormat, cloudFileID: [UInt8]?,
                 plaintextSize: UInt64) throws(DarkDiskError) -> InodeTable.Version {
        guard let (id, kind) = entry.nodeSection else { return .stored(fileID) }
        return version(ofStored: kind, fileID: fileID, format: format, cloudFileID: cloudFileID, plaintextSize: plaintextSize,
                       outline: try manager.outline.entry(id))
    }

    private func version(ofStored kind: FileKind, fileID: Int64, format: CryptoFileFormat, cloudFileID: [UInt8]?, plaintextSize: UInt64,
                         outline: OutlineEntry?) -> InodeTable.Version {
        guard let outline, outline.has(kind) else { return .stored(fileID) }
        let downloaded = kind == .data ? StoredFile.isRemoteVersion(format: format, cloudFileID: cloudFileID, of: outline)
                                       : plaintextSize == outline.plaintextSize(of: kind)
        return downloaded ? .remote(outline.cloudETag) : .stored(fileID)
    }

    /// A `stat` owned by the mounting user, with the mount's time for all three times.
    func baseStat(mode: mode_t, links: nlink_t, size: UInt64 = 0) -> stat {
        var st = stat()
        st.st_uid = uid
        st.st_gid = gid
        st.st_blksize = 65536
        st.st_mode = mode
        st.st_nlink = links
        st.st_size = off_t(size)
        let t = timespec(tv_sec: Int(mountTime.timeIntervalSince1970), tv_nsec: 0)
        st.st_mtim = t
        st.st_ctim = t
        st.st_atim = t
        return st
    }

    /// The open file behind `handle`, or else any open of inode `ino` (`fstat` comes without the handle).
    private func openFile(ino: Inode, handle: UInt64?) -> OpenFile? {
        handles.withLock { open in handle.flatMap { open[$0] } ?? open.values.first { $0.ino == ino } }
    }

    /// `stat` of a file that is only reachable through an open handle (it was deleted meanwhile).
    func attributes(ofOpen file: OpenFile) -> stat {
        switch file.source {
        case .stored(_, let reader): baseStat(mode: S_IFREG | 0o644, links: 0, size: reader.plaintextSize(ofSection: reader.dataSection))
        case .remote(let remote): baseStat(mode: S_IFREG | 0o644, links: 0, size: remote.size)
        case .drive(let writer): baseStat(mode: S_IFREG | 0o644, links: 0, size: writer.content.size)
        }
    }

    func storedFile(of entry: FSEntry) throws(DarkDiskError) -> StoredFile? {
        switch entry {
        case .nodeFile(let id, let kind): try manager.files.storedFile(id, kind: kind)
        case .thumb(let id): try manager.files.storedFile(id, kind: .thumbnail)
        case .avatarFile(let user, let identity): try manager.files.storedAvatar(user, identityID: identity)
        case .driveFile(let id): try manager.files.storedFile(id, kind: .data)
        default: nil
        }
    }
}
