import CFuse3

/// Stable inode numbers for mount entries. Numbers are handed out on first sight and kept for the life of
/// the daemon (the tree is bounded by the index), so the kernel's `forget` needs no bookkeeping.
struct InodeTable: Sendable {
    private var byEntry: [FSEntry: fuse_ino_t] = [.root: 1, .nodes: 2, .thumbs: 3, .avatars: 4]
    private var byInode: [fuse_ino_t: FSEntry] = [1: .root, 2: .nodes, 3: .thumbs, 4: .avatars]
    /// The version last served for an inode; the kernel may keep its page cache while it is unchanged.
    private var served: [fuse_ino_t: Version] = [:]
    private var next: fuse_ino_t = 5

    mutating func inode(for entry: FSEntry) -> fuse_ino_t {
        if let ino = byEntry[entry] { return ino }
        let ino = next
        next += 1
        byEntry[entry] = ino
        byInode[ino] = entry
        return ino
    }

    func entry(for ino: fuse_ino_t) -> FSEntry? {
        byInode[ino]
    }

    /// What an open serves: a stored file (a re-import gets a new file ID), or a remote node's cloud file at
    /// one ETag.
    enum Version: Hashable, Sendable {
        case stored(Int64)
        case remote(String)
    }

    /// Records that `ino` now serves `version`; returns the version it served before (nil: none since the
    /// mount or since `forgetVersion`). The same version means the kernel's page cache is still valid.
    mutating func serve(_ ino: fuse_ino_t, version: Version) -> Version? {
        defer { served[ino] = version }
        return served[ino]
    }

    /// Forgets what `ino` served (its content changed): the next open drops the kernel's cache.
    mutating func forgetVersion(_ ino: fuse_ino_t) {
        served[ino] = nil
    }

    /// The inode of `entry`, if the kernel has been told about it.
    func existingInode(for entry: FSEntry) -> fuse_ino_t? {
        byEntry[entry]
    }
}
