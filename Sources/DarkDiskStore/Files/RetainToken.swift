import DarkDiskSystem

/// Keeps one stored file from being deleted while it is alive, in this process and in every other one.
///
/// It holds an open descriptor with a shared `flock`; deleters and evictors take an exclusive lock without
/// waiting. Eviction leaves a held file in place (and evicts no newer file instead); a delete, expiry or
/// migration leaves its path in the index's pending-delete list, and the last holder to let go finishes
/// it. Releasing a token of a cache file also re-checks the pool's limit, since the file may now be evicted. The kernel drops the lock if the process
/// dies, so a `kill -9` never strands a file.
public final class RetainToken: Sendable {
    /// The retained file, open read-only and holding the shared lock; the token closes it, so a reader keeps
    /// the token, not this, alive.
    let file: OwnedDescriptor
    /// An open, read-only descriptor of the retained file (readers may `pread` it while they keep the token).
    public var fileDescriptor: Int32 { file.rawValue }
    let path: String
    let pool: Pool
    /// Where the file was when retained: a cache file's release kicks an eviction, as the file may now go. A
    /// persistent file is never evicted; one moved to the cache while held (a hard link, so it counts as held
    /// too) is taken by the maintenance timer's next pass (at most 2 s later).
    let mode: StorageMode
    private let manager: StoreFiles

    init(file: OwnedDescriptor, path: String, pool: Pool, mode: StorageMode, manager: StoreFiles) {
        self.file = file
        self.path = path
        self.pool = pool
        self.mode = mode
        self.manager = manager
    }

    deinit {
        // Closed first: the release finishes a pending delete, which needs the lock this token holds gone.
        try? file.close()
        manager.released(path: path, pool: pool, evictable: mode == .cache)
    }
}
