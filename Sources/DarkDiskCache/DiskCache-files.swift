import DarkDiskSystem
import Foundation

extension DiskCache {
    /// Runs `body` with the URL of the file holding `key`'s value, or returns `nil` without calling it when
    /// there is no such value. The file stays at that URL, unchanged, until `body` returns, even if the entry
    /// is removed or replaced meanwhile (in any process); do not use the URL afterwards, and only read the file.
    /// A small value kept in the index is moved into a file first. `removeAll` waits for `body` to return,
    /// so `body` must not call `removeAll` itself.
    public func withFileURL<Result>(forKey key: String, _ body: (URL) throws -> Result) throws -> Result? {
        guard let access = try acquireFile(forKey: key) else { return nil }
        defer { access.release() }
        return try body(access.url)
    }

    /// A value file held open and locked (shared) while a `withFileURL` closure runs.
    struct FileAccess: Sendable {
        let url: URL
        let file: OwnedDescriptor
        let lock: OwnedDescriptor

        /// Lets go of the value file, then of the folder's lock (which `removeAll` waits for).
        func release() {
            try? file.close()
            try? lock.close()
        }
    }

    func acquireFile(forKey key: String) throws(DiskCacheError) -> FileAccess? {
        // (Every way out but the access returned lets go of the folder's lock, as the owner goes.)
        let lock = try FileIO.open(folder.lockPath, O_RDWR | O_CREAT, mode: 0o600, failing: "cannot open")
        do { try lock.lock(.shared) } catch {
            throw DiskCacheError.posix("cannot lock", path: folder.lockPath, errno: error.rawValue)
        }
        for _ in 0..<8 {
            guard let name = try folder.materialize(key, notUnusedSince: cutoff, now: secondsNow) else { break }
            let path = folder.filesPath + "/" + name
            if let file = try? OwnedDescriptor.open(path, O_RDONLY) {
                // Cannot hold it: look the entry up again.
                guard (try? file.lock(.shared)) != nil else { continue }
                // Locked: a remover now leaves the file alone. Still the entry's file? Then it is ours.
                if (try? folder.currentFile(key)) == name {
                    return FileAccess(url: URL(fileURLWithPath: path), file: file, lock: lock)
                }
            } else if (try? folder.currentFile(key)) == name {
                // The entry names a file that is gone (deleted by hand): a damaged entry, removed as a miss.
                let hooks = hooks
                if (try? folder.removeIfFile(key, name, willRemove: { fire(hooks.willRemove, $0) })) == true {
                    fire(hooks.didRemove, key)
                }
                break
            }
        }
        try? lock.close()
        return nil
    }
}
