import Foundation
#if canImport(Glibc)
import Glibc
#endif
import DarkDiskSync
import DarkDiskSystem

/// A remote that is a local folder (`file:///path`): the embedded default, and what tests and a second store
/// on the same machine use. Objects are files; writes go through a temporary file and a rename; the ETag
/// is derived from the file's inode, size and modification time, so any replacement changes it.
///
/// Every object it writes has one mode: `0600` (records hold names and wrapped keys, which other users of
/// the machine have no business reading), or `0644` for a folder a web server serves (`?shared=1`).
public struct FileRemote: Remote {
    public let root: String
    /// Objects readable by everyone, for a folder served by a web server.
    public let shared: Bool
    public var url: String { "file://" + root + (shared ? "?shared=1" : "") }

    public init(root: String, shared: Bool = false) {
        self.root = root
        self.shared = shared
    }

    // Each call's system calls run on the blocking pool: a folder on a slow or hung disk (an NFS share, a
    // USB drive asleep), and the conditional writes' `flock` that another machine holds, would otherwise
    // hold a thread of the cooperative pool, of which a 2-core machine has two.

    public func list(prefix: String) async throws(RemoteError) -> [ObjectInfo] {
        try await BlockingPool.shared.run { () throws(RemoteError) in try self.listNow(prefix: prefix) }
    }

    private func listNow(prefix: String) throws(RemoteError) -> [ObjectInfo] {
        // A missing folder is an unreachable remote, never an empty one (that would read as "all deleted").
        try checkReachable()
        // Only the prefix's own folder is walked: a pull lists `records/`, not every node's cloud file.
        let folder = prefix.lastIndex(of: "/").map { String(prefix[..<$0]) } ?? ""
        var result: [ObjectInfo] = []
        try Self.walk(folder.isEmpty ? root : root + "/" + folder, as: folder.isEmpty ? "" : folder + "/") { key, st in
            guard key.hasPrefix(prefix), !key.hasPrefix(".tmp/"), !key.hasPrefix(".locks/") else { return }
            result.append(ObjectInfo(key: key, size: UInt64(st.st_size), etag: Self.etag(st)))
        }
        return result.sorted { $0.key < $1.key }
    }

    /// Calls `found` with the key (`keyPrefix` and the path below `folder`) and status of every regular file
    /// below `folder`, following no links. A folder that is not there holds nothing.
    private static func walk(_ folder: String, as keyPrefix: String, _ found: (String, stat) -> Void) throws(RemoteError) {
        guard let directory = opendir(folder) else {
            if errno == ENOENT || errno == ENOTDIR { return }
            throw RemoteError(.unreachable, "remote folder \(folder) cannot be read: \(String(cString: strerror(errno)))")
        }
        defer { closedir(directory) }
        var folders: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name != ".", name != ".." else { continue }
            var st = stat()
            guard fstatat(dirfd(directory), name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            switch st.st_mode & S_IFMT {
            case S_IFREG: found(keyPrefix + name, st)
            case S_IFDIR: folders.append(name)
            default: break
            }
        }
        for name in folders { try walk(folder + "/" + name, as: keyPrefix + name + "/", found) }
    }

    public func info(_ key: String) async throws(RemoteError) -> ObjectInfo? {
        try await BlockingPool.shared.run { () throws(RemoteError) in try self.infoNow(key) }
    }

    private func infoNow(_ key: String) throws(RemoteError) -> ObjectInfo? {
        try RemoteKey.check(key)
        try checkReachable()
        var st = stat()
        guard stat(path(key), &st) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw RemoteError(.io, "cannot stat \(path(key)): \(String(cString: strerror(errno)))")
        }
        return ObjectInfo(key: key, size: UInt64(st.st_size), etag: Self.etag(st))
    }

    public func read(_ key: String, range: Range<UInt64>, ifMatch etag: String?,
                     consume: (UnsafeRawBufferPointer) throws(RemoteError) -> Void) async throws(RemoteError) {
        let file = try await BlockingPool.shared.run { () throws(RemoteError) in try self.openForReading(key, range: range, ifMatch: etag) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: min(range.count, 1 << 20), alignment: 16)
        defer { buffer.deallocate() }
        let target = ReadBuffer(base: buffer.baseAddress!)
        var position = range.lowerBound
        while position < range.upperBound {
            let wanted = Int(min(UInt64(buffer.count), range.upperBound - position))
            let at = position
            let n = try await BlockingPool.shared.run { () throws(RemoteError) in
                do { return try file.pread(into: target.base, count: wanted, at: at) } catch {
                    throw RemoteError(.io, "cannot read \(self.path(key)): \(error)")
                }
            }
            guard n > 0 else { throw RemoteError(.invalidResponse, "short read of \(key)") }
            try consume(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
            position += UInt64(n)
        }
    }

    /// A read's buffer, filled by one `pread` on the blocking pool while the reading task waits for it.
    private struct ReadBuffer: @unchecked Sendable {
        let base: UnsafeMutableRawPointer
    }

    /// Opens object `key` for a read of `range`, checked against `etag` and the object's size.
    private func openForReading(_ key: String, range: Range<UInt64>, ifMatch etag: String?) throws(RemoteError) -> OwnedDescriptor {
        try RemoteKey.check(key)
        try checkReachable()
        let file: OwnedDescriptor
        do { file = try OwnedDescriptor.open(path(key), O_RDONLY) } catch {
            if error == .noSuchFile { throw RemoteError(.notFound, "\(key) is not in \(url)") }
            throw RemoteError(.io, "cannot open \(path(key)): \(error)")
        }
        let st: stat
        do { st = try file.stat() } catch { throw RemoteError(.io, "cannot stat \(path(key)): \(error)") }
        if let etag, Self.etag(st) != etag {
            throw RemoteError(.changed, "\(key) changed in \(url)")
        }
        guard range.upperBound <= UInt64(st.st_size) else {
            throw RemoteError(.invalidResponse, "\(key) has \(st.st_size) bytes, not the \(range.upperBound) asked for")
        }
        return file
    }

    public func write(_ key: String, fromFile source: String) async throws(RemoteError) -> ObjectInfo {
        try await BlockingPool.shared.run { () throws(RemoteError) in try self.writeNow(key, fromFile: source) }
    }

    private func writeNow(_ key: String, fromFile source: String) throws(RemoteError) -> ObjectInfo {
        try RemoteKey.check(key)
        let temporary = try temporaryPath()
        do { try Self.copy(source, to: temporary, mode: shared ? 0o644 : 0o600) } catch {
            unlink(temporary)
            throw RemoteError(.io, "cannot copy \(source) to \(url): \(String(cString: strerror(error.rawValue)))")
        }
        return try commit(temporary, as: key)
    }

    /// Renames the file into the bucket when it is on the bucket's file system (its room is used once);
    /// copies it otherwise.
    public func write(_ key: String, movingFile source: String) async throws(RemoteError) -> ObjectInfo {
        try await BlockingPool.shared.run { () throws(RemoteError) in
            try RemoteKey.check(key)
            let temporary = try self.temporaryPath()
            guard rename(source, temporary) == 0 else {
                guard errno == EXDEV else {
                    throw RemoteError(.io, "cannot move \(source) to \(self.url): \(String(cString: strerror(errno)))")
                }
                return try self.writeNow(key, fromFile: source)
            }
            return try self.commit(temporary, as: key)
        }
    }

    /// Copies the file at `source` to a new file at `destination`, 1 MiB at a time.
    private static func copy(_ source: String, to destination: String, mode: mode_t) throws(Errno) {
        let input = try OwnedDescriptor.open(source, O_RDONLY)
        let output = try OwnedDescriptor.open(destination, O_WRONLY | O_CREAT | O_EXCL, mode: mode)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = try input.read(into: buffer, count: 1 << 20)
            if count == 0 { return }
            try output.write(from: buffer, count: count)
        }
    }

    /// Writes `data` to a new file at `path`.
    private static func create(_ path: String, contents data: Data, mode: mode_t) throws(Errno) {
        let file = try OwnedDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL, mode: mode)
        let written: Result<Void, Errno> = data.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0 else { return .success(()) }
            return Result { () throws(Errno) in try file.write(from: base, count: bytes.count) }
        }
        try written.get()
    }

    /// Writes through a temporary file and a rename. A conditional write holds the remote's write lock
    /// (`flock` of `.locks/write`, shared by every process and machine that writes to the folder) from the
    /// comparison to the rename, so two writers based on the same ETag cannot both land.
    public func write(_ key: String, data: Data, condition: WriteCondition) async throws(RemoteError) -> ObjectInfo {
        try await BlockingPool.shared.run { () throws(RemoteError) in try self.writeNow(key, data: data, condition: condition) }
    }

    private func writeNow(_ key: String, data: Data, condition: WriteCondition) throws(RemoteError) -> ObjectInfo {
        try RemoteKey.check(key)
        let temporary = try temporaryPath()
        do { try Self.create(temporary, contents: data, mode: shared ? 0o644 : 0o600) } catch {
            unlink(temporary)
            throw RemoteError(.io, "cannot write \(temporary): \(String(cString: strerror(error.rawValue)))")
        }
        guard condition != .none else { return try commit(temporary, as: key) }
        let lock = try WriteLock(root: root, shared: shared)
        defer { lock.release() }
        var st = stat()
        let current: String?
        if stat(path(key), &st) == 0 {
            current = Self.etag(st)
        } else if errno == ENOENT || errno == ENOTDIR {
            current = nil
        } else {
            let message = String(cString: strerror(errno))
            unlink(temporary)
            throw RemoteError(.io, "cannot stat \(path(key)): \(message)")
        }
        let holds: Bool
        switch condition {
        case .none: holds = true
        case .absent: holds = current == nil
        case .matches(let etag): holds = current == etag
        }
        guard holds else {
            unlink(temporary)
            throw RemoteError(.preconditionFailed, "\(url): \(key) is not as this write expected (\(condition == .absent ? "it exists" : "it changed or went"))")
        }
        return try commit(temporary, as: key)
    }

    /// The lock a conditional write holds from its comparison to its rename.
    private struct WriteLock {
        let file: OwnedDescriptor

        init(root: String, shared: Bool) throws(RemoteError) {
            let folder = root + "/.locks"
            mkdir(folder, shared ? 0o755 : 0o700)
            do { file = try OwnedDescriptor.open(folder + "/write", O_RDWR | O_CREAT, mode: shared ? 0o644 : 0o600) } catch {
                throw RemoteError(.io, "cannot open the write lock of \(root): \(error)")
            }
            do { try file.lock(.exclusive) } catch {
                throw RemoteError(.io, "cannot lock \(folder)/write: \(error)")
            }
        }

        func release() { try? file.close() }
    }

    public func delete(_ key: String, condition: WriteCondition) async throws(RemoteError) {
        try await BlockingPool.shared.run { () throws(RemoteError) in try self.deleteNow(key, condition: condition) }
    }

    private func deleteNow(_ key: String, condition: WriteCondition) throws(RemoteError) {
        try RemoteKey.check(key)
        try checkReachable()
        guard condition != .absent else { throw RemoteError(.invalidURL, "a delete cannot be conditioned on the object being absent") }
        var lock: WriteLock?
        if case .matches(let etag) = condition {
            lock = try WriteLock(root: root, shared: shared)
            var st = stat()
            guard stat(path(key), &st) == 0, Self.etag(st) == etag else {
                lock?.release()
                throw RemoteError(.preconditionFailed, "\(url): \(key) is not as this delete expected (it changed or went)")
            }
        }
        defer { lock?.release() }
        if unlink(path(key)) != 0 && errno != ENOENT {
            throw RemoteError(.io, "cannot delete \(path(key)): \(String(cString: strerror(errno)))")
        }
    }

    private func path(_ key: String) -> String { root + "/" + key }

    private func checkReachable() throws(RemoteError) {
        var st = stat()
        guard stat(root, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else {
            throw RemoteError(.unreachable, "remote folder \(root) does not exist")
        }
    }

    /// When each remote folder's `.tmp/` was last swept by this process.
    private static let swept = Locked<[String: Double]>([:])

    private func temporaryPath() throws(RemoteError) -> String {
        // A remote folder that is gone (an unmounted share or disk) is unreachable: a write must not make a
        // new, empty one in its place.
        try checkReachable()
        let folder = root + "/.tmp"
        guard mkdir(folder, 0o700) == 0 || errno == EEXIST else {
            throw RemoteError(.unreachable, "cannot write to remote folder \(root): \(String(cString: strerror(errno)))")
        }
        // Abandoned writes are an hour old before they go: one sweep every ten minutes is enough (a sweep at
        // every write listed the folder once per object uploaded).
        let now = Date().timeIntervalSince1970
        let due = Self.swept.withLock { swept in
            guard now - (swept[folder] ?? 0) >= 600 else { return false }
            swept[folder] = now
            return true
        }
        if due { Self.sweepAbandoned(folder) }
        return folder + "/" + UUID().uuidString
    }

    /// Removes the temporary files of writes that stopped (a killed `push`) from the bucket's `.tmp/`: those
    /// not written to for an hour (a live write, from any machine, touches its file as it goes).
    static func sweepAbandoned(_ folder: String, olderThan seconds: Double = 3600) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            var st = stat()
            let path = folder + "/" + name
            guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG,
                  Date().timeIntervalSince1970 - Double(st.st_mtim.tv_sec) > seconds else { continue }
            unlink(path)
        }
    }

    private func commit(_ temporary: String, as key: String) throws(RemoteError) -> ObjectInfo {
        let destination = path(key)
        guard Self.makeFolders(of: destination, below: root, mode: shared ? 0o755 : 0o700) else {
            unlink(temporary)
            throw RemoteError(.io, "cannot create the folder of \(destination): \(String(cString: strerror(errno)))")
        }
        // (Best effort, as before: the rename below is what must not fail.)
        if let file = try? OwnedDescriptor.open(temporary, O_RDONLY) {
            fchmod(file.rawValue, shared ? 0o644 : 0o600)
            try? file.fsync()
        }
        guard rename(temporary, destination) == 0 else {
            let message = String(cString: strerror(errno))
            unlink(temporary)
            throw RemoteError(.io, "cannot store \(destination): \(message)")
        }
        var st = stat()
        stat(destination, &st)
        return ObjectInfo(key: key, size: UInt64(st.st_size), etag: Self.etag(st))
    }

    /// Makes the folders of `path` below `root` (which exists) that are missing.
    /// (Folders have the objects' privacy: `0700`, or `0755` in a shared bucket.)
    private static func makeFolders(of path: String, below root: String, mode: mode_t) -> Bool {
        guard let slash = path.lastIndex(of: "/") else { return true }
        let folder = String(path[..<slash])
        if folder.utf8.count <= root.utf8.count || mkdir(folder, mode) == 0 || errno == EEXIST { return true }
        guard errno == ENOENT, makeFolders(of: folder, below: root, mode: mode) else { return false }
        return mkdir(folder, mode) == 0 || errno == EEXIST
    }

    static func etag(_ st: stat) -> String {
        String(UInt64(st.st_ino), radix: 16) + "-" + String(UInt64(st.st_size), radix: 16) + "-"
            + String(UInt64(st.st_mtim.tv_sec) &* 1_000_000_000 &+ UInt64(st.st_mtim.tv_nsec), radix: 16)
    }
}
