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
        let fd: Int32
        let lockFD: Int32

        func release() {
            close(fd)
            close(lockFD)
        }
    }

    func acquireFile(forKey key: String) throws(DiskCacheError) -> FileAccess? {
        let lockFD = open(folder.lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lockFD >= 0 else { throw DiskCacheError.posix("cannot open", path: folder.lockPath) }
        do { try SystemCall.lock(lockFD, .shared) } catch {
            close(lockFD)
            throw DiskCacheError.posix("cannot lock", path: folder.lockPath, errno: error.rawValue)
        }
        for _ in 0..<8 {
            let name: String?
            do {
                name = try folder.materialize(key, notUnusedSince: cutoff, now: secondsNow)
            } catch {
                close(lockFD)
                throw error
            }
            guard let name else { break }
            let path = folder.filesPath + "/" + name
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            if fd >= 0 {
                guard (try? SystemCall.lock(fd, .shared)) != nil else {
                    close(fd)
                    continue  // cannot hold it: look the entry up again
                }
                // Locked: a remover now leaves the file alone. Still the entry's file? Then it is ours.
                if (try? folder.currentFile(key)) == name {
                    return FileAccess(url: URL(fileURLWithPath: path), fd: fd, lockFD: lockFD)
                }
                close(fd)
            } else if (try? folder.currentFile(key)) == name {
                // The entry names a file that is gone (deleted by hand): a damaged entry, removed as a miss.
                let hooks = hooks
                if (try? folder.removeIfFile(key, name, willRemove: { fire(hooks.willRemove, $0) })) == true {
                    fire(hooks.didRemove, key)
                }
                break
            }
        }
        close(lockFD)
        return nil
    }
}
