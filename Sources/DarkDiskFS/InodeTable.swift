import CFuse3

/// Stable inode numbers for mount entries. Numbers are handed out on first sight and kept for the life of
/// the daemon (the tree is bounded by the index), so the kernel's `forget` needs no bookkeeping.
struct InodeTable: Sendable {
    private var byEntry: [FSEntry: fuse_ino_t] = [.root: 1, .nodes: 2, .thumbs: 3, .avatars: 4]
    private var byInode: [fuse_ino_t: FSEntry] = [1: .root, 2: .nodes, 3: .thumbs, 4: .avatars]
    /// The stored file ID last served for an inode; the kernel may keep its page cache while it is unchanged.
    private var servedFileID: [fuse_ino_t: Int64] = [:]
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

    /// Records that `ino` now serves `fileID`; returns whether that was already so (page cache still valid).
    mutating func serve(_ ino: fuse_ino_t, fileID: Int64) -> Bool {
        defer { servedFileID[ino] = fileID }
        return servedFileID[ino] == fileID
    }
}
