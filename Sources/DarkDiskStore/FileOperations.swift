import DarkDiskSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Thin, errno-checked wrappers over the POSIX calls the store relies on for atomicity
/// (write to a staging file, fsync, rename, fsync the directory) and for locking (flock).
enum FileOperations {
    /// Opens `path` (`OwnedDescriptor.open`: close-on-exec, `EINTR` retried); a failure is an `.io` error
    /// saying `what` failed on the path, with its errno.
    static func openFile(_ path: String, _ flags: Int32, mode: mode_t = 0, failing what: String = "cannot open") throws(DarkDiskError) -> OwnedDescriptor {
        do { return try OwnedDescriptor.open(path, flags, mode: mode) } catch {
            throw .posix(what, path: path, errno: error.rawValue)
        }
    }

    /// Creates `path` and its parents with `mode` (existing folders are left as they are). A folder inside
    /// the store must be a real directory: a symbolic link there (planted, or made by mistake) would send
    /// the store's writes and sweeps outside it, so it is refused unless `allowLink` (the store's three
    /// roots, which a user may point elsewhere, and the folders above them).
    static func makeDirectory(_ path: String, mode: mode_t = 0o700, allowLink: Bool = false) throws(DarkDiskError) {
        var st = stat()
        if lstat(path, &st) == 0 {
            if st.st_mode & S_IFMT == S_IFLNK {
                guard allowLink else {
                    throw DarkDiskError(.io, "\(path) is a symbolic link; darkdisk does not follow links inside its store (remove it)")
                }
                guard stat(path, &st) == 0 else { throw .posix("cannot follow the link", path: path) }
            }
            guard st.st_mode & S_IFMT == S_IFDIR else { throw DarkDiskError(.io, "\(path) exists and is not a directory") }
            return
        }
        let parent = (path as NSString).deletingLastPathComponent
        if parent != path && !parent.isEmpty { try makeDirectory(parent, mode: mode, allowLink: true) }
        if mkdir(path, mode) != 0 && errno != EEXIST { throw .posix("cannot create directory", path: path) }
    }

    /// The names in `path` if it is a real directory (not a symbolic link to one), else nil: the sweeps
    /// that delete debris list folders with this, so a planted link never leads them outside the store.
    static func realDirectoryEntries(_ path: String) -> [String]? {
        var st = stat()
        guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else { return nil }
        return try? FileManager.default.contentsOfDirectory(atPath: path)
    }

    /// Writes a new file (never replacing one) and flushes it to disk.
    static func writeNewFile(_ path: String, contents: Data, mode: mode_t) throws(DarkDiskError) {
        try makeDirectory((path as NSString).deletingLastPathComponent)
        let file = try openFile(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode, failing: "cannot create")
        let failure = contents.withUnsafeBytes { buffer -> Errno? in
            do throws(Errno) {
                if !buffer.isEmpty { try file.write(from: buffer.baseAddress!, count: buffer.count) }
                try file.fsync()
            } catch { return error }
            return nil
        }
        if let failure {
            unlink(path)
            throw .posix("cannot write", path: path, errno: failure.rawValue)
        }
        try syncDirectory(of: path)
    }

    /// Reads a small file that must be a regular file owned by us and closed to group and others.
    static func readPrivateFile(_ path: String, what: String) throws(DarkDiskError) -> Data {
        let file: OwnedDescriptor
        do { file = try OwnedDescriptor.open(path, O_RDONLY | O_NOFOLLOW) } catch {
            if error.rawValue == ENOENT { throw DarkDiskError(.keyFile, "\(what) \(path) does not exist", errno: ENOENT) }
            if error.rawValue == ELOOP { throw DarkDiskError(.keyFile, "\(what) \(path) is a symbolic link; refusing to use it", errno: ELOOP) }
            throw .posix("cannot open \(what)", path: path, errno: error.rawValue)
        }
        let st: stat
        do { st = try file.stat() } catch { throw .posix("cannot stat \(what)", path: path, errno: error.rawValue) }
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw DarkDiskError(.keyFile, "\(what) \(path) is not a regular file") }
        guard st.st_uid == getuid() else {
            throw DarkDiskError(.keyFile, "\(what) \(path) is owned by uid \(st.st_uid), not by you (uid \(getuid())); refusing to use it")
        }
        let perms = st.st_mode & 0o777
        guard perms & 0o077 == 0 else {
            throw DarkDiskError(.keyFile, "\(what) \(path) is accessible by group or others (mode \(String(perms, radix: 8))); run 'chmod 600 \(path)'")
        }
        guard st.st_size < 1 << 20 else { throw DarkDiskError(.keyFile, "\(what) \(path) is too large") }
        let bytes: [UInt8]
        do { bytes = try file.pread(count: Int(st.st_size), at: 0) } catch {
            throw .posix("cannot read \(what)", path: path, errno: error.rawValue)
        }
        guard bytes.count == Int(st.st_size) else { throw .posix("cannot read \(what)", path: path, errno: EIO) }  // (it shrank meanwhile)
        return Data(bytes)
    }

    /// Flushes the directory entry of `path` (after a create or rename) so it survives a power loss.
    static func syncDirectory(of path: String) throws(DarkDiskError) {
        let dir = (path as NSString).deletingLastPathComponent
        let folder = try openFile(dir, O_RDONLY | O_DIRECTORY, failing: "cannot open directory")
        try? folder.fsync()  // (best effort, as before: a file system that cannot flush a folder still renames)
    }

    /// Atomically moves `source` to `destination` (same file system), creating the destination folder.
    static func rename(_ source: String, to destination: String) throws(DarkDiskError) {
        try makeDirectory((destination as NSString).deletingLastPathComponent)
        guard Glibc.rename(source, destination) == 0 else { throw .posix("cannot move \(source) to", path: destination) }
        try syncDirectory(of: destination)
    }

    /// Removes a file; a file that is already gone is not an error.
    static func remove(_ path: String) {
        if unlink(path) != 0 && errno != ENOENT {
            // Leave it: the orphan sweep at the next start retries.
        }
    }

    /// A fresh random file name (128 bits, hex) with an extension.
    static func randomName(extension ext: String = "ddf") -> String {
        var rng = SystemRandomNumberGenerator()
        // 32 hex digits, then the extension (no `String(format:)`: one is made for every new stored file).
        let digits = Array("0123456789abcdef".utf8)
        var name = [UInt8](repeating: 0, count: 32)
        for half in 0..<2 {
            var value: UInt64 = rng.next()
            for index in stride(from: half * 16 + 15, through: half * 16, by: -1) {
                name[index] = digits[Int(value & 0xF)]
                value >>= 4
            }
        }
        return String(decoding: name, as: UTF8.self) + "." + ext
    }

    /// Seconds since the file's status last changed (created, renamed, written), or 0 if it is gone.
    static func changedSecondsAgo(_ path: String) -> Double {
        var st = stat()
        guard stat(path, &st) == 0 else { return 0 }
        return Date().timeIntervalSince1970 - Double(st.st_ctim.tv_sec)
    }
}

extension FileOperations {
    /// How `move(_:onto:)` placed the file.
    enum Moved {
        /// The destination path now names the source's inode (descriptors on the old destination see the
        /// replaced file, not the moved one).
        case renamed
        /// The source was on another file system: its bytes were copied into the destination's own inode
        /// (descriptors and locks on it stay valid), flushed, and the source unlinked.
        case copied
    }

    /// Moves `source` onto `destination`, a file the caller created (and may hold open and locked), across
    /// file systems if needed.
    static func move(_ source: String, onto destination: String) throws(DarkDiskError) -> Moved {
        if Glibc.rename(source, destination) == 0 { return .renamed }
        guard errno == EXDEV else { throw .posix("cannot move \(source) to", path: destination) }
        let input = try openFile(source, O_RDONLY)
        try copy(input.rawValue, from: source, to: destination, creating: false)
        unlink(source)
        return .copied
    }
}

extension FileOperations {
    /// Takes a `flock` on a store file (the retain-token protocol: shared by holders, exclusive by deleters
    /// and writers), waiting for it.
    static func lock(_ fd: Int32, _ kind: SystemCall.LockKind, path: String) throws(DarkDiskError) {
        do { try SystemCall.lock(fd, kind) } catch { throw .posix("cannot lock", path: path, errno: error.rawValue) }
    }

    /// Copies the open file `source` to `destination` and flushes it: a new file, or with `creating: false`
    /// over the existing one (truncated first).
    static func copy(_ source: Int32, from sourcePath: String, to destination: String, creating: Bool = true) throws(DarkDiskError) {
        let flags = creating ? O_CREAT | O_EXCL : O_TRUNC | O_NOFOLLOW
        let output = try openFile(destination, O_WRONLY | flags, mode: 0o600, failing: creating ? "cannot create" : "cannot open")
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: off_t = 0
        while true {
            let n: Int
            do { n = try SystemCall.pread(source, into: &buffer, count: buffer.count, at: UInt64(offset)) } catch {
                unlink(destination)
                throw .posix("cannot read", path: sourcePath, errno: error.rawValue)
            }
            if n == 0 { break }
            let failure = buffer.withUnsafeBytes { bytes -> Errno? in
                do throws(Errno) { try output.write(from: bytes.baseAddress!, count: n) } catch { return error }
                return nil
            }
            if let failure {
                unlink(destination)
                throw .posix("cannot write", path: destination, errno: failure.rawValue)
            }
            offset += off_t(n)
        }
        do { try output.fsync() } catch {
            unlink(destination)
            throw .posix("cannot flush", path: destination, errno: error.rawValue)
        }
    }
}
