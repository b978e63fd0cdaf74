

/// Inode numbers for mount entries. A folder has one number for the life of the daemon. A file has one
/// number per *version* it serves (a stored file, or a remote node's cloud file at one ETag): the kernel
/// keys its page cache and cached attributes by inode, so a re-imported or re-pulled node gets a new inode
/// and never shares pages with the version that handles opened before keep reading. A file's content
/// under one inode never changes, so the kernel may keep its pages for good; a stale inode goes once the
/// kernel forgets it.
struct InodeTable: Sendable {
    /// What an inode stands for: a path, and for files the version it serves.
    struct Key: Hashable, Sendable {
        let entry: FSEntry
        let version: Version?
    }

    /// What a file inode serves: a stored file (a re-import gets a new file ID), a remote node's cloud file
    /// at one ETag, or an avatar the remote lists under one key.
    enum Version: Hashable, Sendable {
        case stored(Int64)
        case remote(String)
        case listed([UInt8])
    }

    /// Entries without a version (folders, drive entries): one inode for the life of the daemon. Kept apart
    /// from the versioned ones, keyed by the entry alone: with a million node folders listed, keys half the
    /// size of a `Key` saved a third of the daemon's memory (and of the peak while a table grows).
    private var unversioned: [FSEntry: Inode] = [:]
    private var unversionedByInode: [Inode: FSEntry] = [:]
    /// File inodes, one per version served.
    private var versioned: [Key: Inode] = [:]
    private var versionedByInode: [Inode: Key] = [:]
    /// The newest inode handed out for each file entry: the only one a `forget` leaves in place.
    private var newest: [FSEntry: Inode] = [:]
    /// The kernel's lookup count of file inodes (FUSE's `nlookup`), so stale versions can go at `forget`.
    private var lookups: [Inode: UInt64] = [:]
    private var next: Inode = 5

    init() {
        for (ino, entry) in [(1, FSEntry.root), (2, .nodes), (3, .thumbs), (4, .avatars)] {
            unversioned[entry] = Inode(ino)
            unversionedByInode[Inode(ino)] = entry
        }
    }

    /// The inode of `entry` at `version` (nil for folders), handed out on first sight.
    mutating func inode(for entry: FSEntry, version: Version? = nil) -> Inode {
        guard let version else {
            if let ino = unversioned[entry] { return ino }
            let ino = next
            next += 1
            unversioned[entry] = ino
            unversionedByInode[ino] = entry
            return ino
        }
        let key = Key(entry: entry, version: version)
        if let ino = versioned[key] { return ino }
        let ino = next
        next += 1
        versioned[key] = ino
        versionedByInode[ino] = key
        newest[entry] = ino
        return ino
    }

    /// Counts one more kernel reference (a reply to `lookup`) to a file inode.
    mutating func lookedUp(_ ino: Inode) {
        guard versionedByInode[ino] != nil else { return }
        lookups[ino, default: 0] += 1
    }

    /// The kernel dropped `count` references to `ino`. A file inode that is no longer the newest version of
    /// its entry and that the kernel no longer knows is gone for good (nothing can reach it any more).
    mutating func forget(_ ino: Inode, count: UInt64) {
        guard let key = versionedByInode[ino] else { return }
        let left = (lookups[ino] ?? 0) > count ? lookups[ino]! - count : 0
        lookups[ino] = left == 0 ? nil : left
        guard left == 0, newest[key.entry] != ino else { return }
        versionedByInode[ino] = nil
        versioned[key] = nil
    }

    func key(for ino: Inode) -> Key? {
        if let entry = unversionedByInode[ino] { return Key(entry: entry, version: nil) }
        return versionedByInode[ino]
    }

    func entry(for ino: Inode) -> FSEntry? {
        unversionedByInode[ino] ?? versionedByInode[ino]?.entry
    }

    /// The newest inode handed out for a file entry, if any.
    func newestInode(for entry: FSEntry) -> Inode? {
        newest[entry]
    }

    /// The inode of a folder, if the kernel has been told about it.
    func existingInode(for entry: FSEntry) -> Inode? {
        unversioned[entry]
    }
}
