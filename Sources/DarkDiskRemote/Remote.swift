import Foundation

/// An object store holding the cloud files and records of a user's nodes. Keys are relative
/// paths made of `[A-Za-z0-9._/-]`, never absolute and never containing `..`.
public protocol Remote: Sendable {
    /// The remote's URL, for messages.
    var url: String { get }
    /// Every object whose key starts with `prefix`.
    func list(prefix: String) async throws(RemoteError) -> [ObjectInfo]
    /// The object's size and ETag, or nil if it does not exist.
    func info(_ key: String) async throws(RemoteError) -> ObjectInfo?
    /// Streams bytes `range` of the object to `consume`, in order, as they arrive (so a large part never sits
    /// in memory). Fails with `.changed` if the object's ETag is no longer `ifMatch`. Exactly `range.count`
    /// bytes are delivered or the call throws; bytes delivered before a throw are correct, so a caller may
    /// keep them and ask for the rest. An error thrown by `consume` ends the read and is rethrown.
    func read(_ key: String, range: Range<UInt64>, ifMatch etag: String?,
              consume: (UnsafeRawBufferPointer) throws(RemoteError) -> Void) async throws(RemoteError)
    /// Stores a whole object from a local file, atomically; returns its new info.
    func write(_ key: String, fromFile path: String) async throws(RemoteError) -> ObjectInfo
    /// Stores a whole object from a local file the caller gives up: a remote on the same file system may
    /// move the file into place instead of copying it (so an upload needs the object's room once, not
    /// twice). The file may be gone afterwards, whether the write succeeded or not.
    func write(_ key: String, movingFile path: String) async throws(RemoteError) -> ObjectInfo
    /// Stores a whole small object, atomically, if `condition` holds when it lands; otherwise fails with
    /// `.preconditionFailed` and leaves the object as it was (conditional writes).
    func write(_ key: String, data: Data, condition: WriteCondition) async throws(RemoteError) -> ObjectInfo
    /// Removes an object; a missing object is not an error. With `.matches(ETAG)`, only if the object is still
    /// that one (else `.preconditionFailed`, and it stays); `.absent` is refused as a condition of a delete.
    func delete(_ key: String, condition: WriteCondition) async throws(RemoteError)
    /// Aborts the multipart uploads under `prefix` that were started before `date` and never completed or
    /// aborted (a `kill -9` mid-upload leaves them, billed and invisible to listings); returns how many.
    /// Remotes without multipart uploads have none.
    func abortUnfinishedUploads(prefix: String, startedBefore date: Date) async throws(RemoteError) -> Int
}

extension Remote {
    public func abortUnfinishedUploads(prefix: String, startedBefore date: Date) async throws(RemoteError) -> Int { 0 }

    /// A remote that cannot take a file over copies it.
    public func write(_ key: String, movingFile path: String) async throws(RemoteError) -> ObjectInfo {
        try await write(key, fromFile: path)
    }

    /// Removes an object whatever it holds; a missing object is not an error.
    public func delete(_ key: String) async throws(RemoteError) {
        try await delete(key, condition: .none)
    }

    /// Stores a whole small object, atomically, whatever is there.
    public func write(_ key: String, data: Data) async throws(RemoteError) -> ObjectInfo {
        try await write(key, data: data, condition: .none)
    }

    /// Bytes `range` of the object, collected in memory (for records and other small reads).
    public func read(_ key: String, range: Range<UInt64>, ifMatch etag: String?) async throws(RemoteError) -> Data {
        var data = Data()
        data.reserveCapacity(range.count)
        try await read(key, range: range, ifMatch: etag) { (bytes: UnsafeRawBufferPointer) throws(RemoteError) in
            data.append(contentsOf: bytes)
        }
        return data
    }

    /// Reads a whole small object, as one version of it: replaced between its HEAD and its GET (another
    /// machine writing it), it is read again; gone meanwhile, it is nil.
    public func readAll(_ key: String) async throws(RemoteError) -> Data? {
        for _ in 0..<5 {
            guard let info = try await info(key) else { return nil }
            do {
                return try await read(key, range: 0..<info.size, ifMatch: info.etag)
            } catch {
                guard error.code == .changed || error.code == .notFound else { throw error }
            }
        }
        throw RemoteError(.changed, "\(url): \(key) kept changing while it was read; try again")
    }
}

/// Key validation shared by remotes: no traversal out of the bucket.
enum RemoteKey {
    static func check(_ key: String) throws(RemoteError) {
        let allowed = key.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || b == UInt8(ascii: "/")
        }
        guard allowed, !key.isEmpty, !key.hasPrefix("/"), !key.split(separator: "/").contains("..") else {
            throw RemoteError(.invalidURL, "invalid object key '\(key)'")
        }
    }
}
