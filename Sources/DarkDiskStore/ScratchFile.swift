import DarkDiskSync
import DarkDiskSystem
import Foundation

/// A file of the store's cache staging folder for a component's own encrypted scratch data (a cloud file
/// composed for an upload), held with a shared lock. When released it goes back to its manager's
/// `ScratchFilePool`, emptied, for the next one (until `releaseScratchFiles`); else it is removed. One moved
/// away meanwhile (a remote on the same file system took it as an object) is only closed, never emptied. A process
/// killed while holding one leaves it to the orphan sweep (unlocked and untouched for ten minutes), never to
/// /tmp.
package final class ScratchFile: Sendable {
    package let path: String
    /// The file, open and holding the shared lock; it goes back to the pool, or is removed, with this.
    private let file: OwnedDescriptor
    private let pool: ScratchFilePool?

    init(folder: String, pool: ScratchFilePool? = nil) throws(DarkDiskError) {
        self.pool = pool
        if let kept = pool?.take() {
            (path, file) = kept
            return
        }
        try FileOperations.makeDirectory(folder)
        path = folder + "/" + FileOperations.randomName(extension: "scratch")
        file = try FileOperations.openFile(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600, failing: "cannot create")
        do { try file.lock(.shared) } catch {
            unlink(path)
            throw DarkDiskError.posix("cannot lock", path: path, errno: error.rawValue)
        }
        StagingFiles.register(path)
    }

    deinit {
        if let pool, pool.keep(path: path, file: file) { return }
        ScratchFilePool.remove(path: path, file: file)
    }
}

/// Scratch files kept between uses, emptied and still locked: an upload then makes and frees no inode.
/// (ext4 without a journal skips every inode freed in the last five minutes when it makes a new one: each
/// upload's scratch file, made and removed, slowed every file made on that disk afterwards.) At most
/// `limit` are kept; the rest are removed as before.
final class ScratchFilePool: Sendable {
    private let kept = Locked<[(path: String, file: OwnedDescriptor)]>([])
    static let limit = 8

    /// A kept file still at its path, or nil.
    func take() -> (path: String, file: OwnedDescriptor)? {
        while let kept = kept.withLock({ $0.popLast() }) {
            if Self.isAtItsPath(kept.path, kept.file) { return kept }
            Self.remove(path: kept.path, file: kept.file)  // (removed meanwhile: an interrupted command's cleanup)
        }
        return nil
    }

    /// Empties the file and keeps it for the next `take`; false (and nothing kept) when the pool is full or
    /// the file is no longer at its path (a writer that failed removed it).
    func keep(path: String, file: OwnedDescriptor) -> Bool {
        guard Self.isAtItsPath(path, file), (try? file.truncate(to: 0)) != nil else { return false }
        return kept.withLock { kept in
            guard kept.count < Self.limit else { return false }
            kept.append((path, file))
            return true
        }
    }

    /// Removes every kept file (before the process exits: a kept file outlives it unlocked, and `check`
    /// would count it as an interrupted import's).
    func removeAll() {
        for kept in kept.withLock({ kept in defer { kept.removeAll() }; return kept }) { Self.remove(path: kept.path, file: kept.file) }
    }

    deinit {
        removeAll()
    }

    /// Removes the file at `path`, then closes it (its lock kept it from a sweep until it was gone).
    static func remove(path: String, file: OwnedDescriptor) {
        StagingFiles.unregister(path)
        unlink(path)
        try? file.close()
    }

    private static func isAtItsPath(_ path: String, _ file: OwnedDescriptor) -> Bool {
        var named = stat()
        guard let open = try? file.stat() else { return false }
        return open.st_nlink > 0 && lstat(path, &named) == 0 && named.st_ino == open.st_ino && named.st_dev == open.st_dev
    }
}

extension DiskManager {
    /// A scratch file in the cache staging folder (see `ScratchFile`), a kept one if there is one.
    @available(*, noasync)
    package func makeScratchFile() throws(DarkDiskError) -> ScratchFile {
        try ScratchFile(folder: location.cacheStaging, pool: scratchFiles)
    }

    /// Removes the scratch files kept for later uploads; call before the process exits (a command's end, the
    /// mount's), since a store that is never released would leave them behind.
    package func releaseScratchFiles() {
        scratchFiles.removeAll()
    }
}
