import DarkDiskCloud
import Foundation
import Synchronization

/// A real remote seen through a small fault-injecting proxy: it counts the bytes and reads that cross it,
/// and can cut the connection after some parts, shorten a body, or replace the object between parts.
final class FaultyRemote: Remote, Sendable {
    let inner: FileRemote
    let bytesRead = Atomic<Int>(0)
    let reads = Atomic<Int>(0)
    /// Fail every read after this many have succeeded (a lost connection).
    let failAfterReads = Atomic<Int>(Int.max)
    /// Return one byte less than asked on every read (a truncated body).
    let truncate = Atomic<Bool>(false)
    /// After this many reads, replace the object with these bytes (an ETag change mid-download).
    let replaceAfterReads = Mutex<(Int, String, Data)?>(nil)

    init(_ inner: FileRemote) { self.inner = inner }

    var url: String { inner.url }

    func list(prefix: String) async throws(RemoteError) -> [ObjectInfo] { try await inner.list(prefix: prefix) }
    func info(_ key: String) async throws(RemoteError) -> ObjectInfo? { try await inner.info(key) }
    func write(_ key: String, fromFile path: String) async throws(RemoteError) -> ObjectInfo { try await inner.write(key, fromFile: path) }
    func write(_ key: String, data: Data) async throws(RemoteError) -> ObjectInfo { try await inner.write(key, data: data) }
    func delete(_ key: String) async throws(RemoteError) { try await inner.delete(key) }

    func read(_ key: String, range: Range<UInt64>, ifMatch etag: String?,
              consume: (UnsafeRawBufferPointer) throws(RemoteError) -> Void) async throws(RemoteError) {
        let count = reads.wrappingAdd(1, ordering: .relaxed).newValue
        if count > failAfterReads.load(ordering: .relaxed) { throw RemoteError(.unreachable, "connection reset (injected)") }
        if let (after, replacedKey, data) = replaceAfterReads.withLock({ $0 }), count == after + 1 {
            _ = try await inner.write(replacedKey, data: data)
        }
        // A truncating remote breaks the protocol: it returns normally one byte short.
        let wanted = truncate.load(ordering: .relaxed) && !range.isEmpty ? range.lowerBound..<range.upperBound - 1 : range
        try await inner.read(key, range: wanted, ifMatch: etag) { (bytes: UnsafeRawBufferPointer) throws(RemoteError) in
            bytesRead.wrappingAdd(bytes.count, ordering: .relaxed)
            try consume(bytes)
        }
    }
}
