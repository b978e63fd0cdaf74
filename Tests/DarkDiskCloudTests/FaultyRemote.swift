import DarkDiskCloud
import Foundation
import Synchronization
import DarkDiskSync

/// A real remote seen through a small fault-injecting layer: it counts the bytes and reads that cross it,
/// and can cut the connection after some reads or bytes, shorten a body, flip a byte, slow down, or replace
/// the object between parts.
final class FaultyRemote: Remote, Sendable {
    let inner: FileRemote
    let bytesRead = Atomic<Int>(0)
    let reads = Atomic<Int>(0)
    /// Fail every read after this many have succeeded (a lost connection).
    let failAfterReads = Atomic<Int>(Int.max)
    /// Cut the connection once this many body bytes have crossed (counted over all reads).
    let failAfterBytes = Atomic<Int>(Int.max)
    /// Return one byte less than asked on every read (a truncated body).
    let truncate = Atomic<Bool>(false)
    /// Flip the byte at this offset of any object read (bit rot on the server); -1 for none.
    let corruptOffset = Atomic<Int>(-1)
    /// Microseconds to wait before each 64 KiB delivered (a slow server).
    let delayPer64KiB = Atomic<Int>(0)
    /// After this many reads, replace the object with these bytes (an ETag change mid-download).
    let replaceAfterReads = Locked<(Int, String, Data)?>(nil)

    init(_ inner: FileRemote) { self.inner = inner }

    var url: String { inner.url }

    func list(prefix: String) async throws(RemoteError) -> [ObjectInfo] { try await inner.list(prefix: prefix) }
    func info(_ key: String) async throws(RemoteError) -> ObjectInfo? { try await inner.info(key) }
    func write(_ key: String, fromFile path: String) async throws(RemoteError) -> ObjectInfo { try await inner.write(key, fromFile: path) }
    func write(_ key: String, data: Data, condition: WriteCondition) async throws(RemoteError) -> ObjectInfo { try await inner.write(key, data: data, condition: condition) }
    func delete(_ key: String, condition: WriteCondition) async throws(RemoteError) { try await inner.delete(key, condition: condition) }

    func read(_ key: String, range: Range<UInt64>, ifMatch etag: String?,
              consume: (UnsafeRawBufferPointer) throws(RemoteError) -> Void) async throws(RemoteError) {
        let count = reads.wrappingAdd(1, ordering: .relaxed).newValue
        if count > failAfterReads.load(ordering: .relaxed) { throw RemoteError(.unreachable, "connection reset (injected)") }
        if let (after, replacedKey, data) = replaceAfterReads.withLock({ $0 }), count == after + 1 {
            _ = try await inner.write(replacedKey, data: data)
        }
        // A truncating remote breaks the protocol: it returns normally one byte short.
        let wanted = truncate.load(ordering: .relaxed) && !range.isEmpty ? range.lowerBound..<range.upperBound - 1 : range
        let data = try await inner.read(key, range: wanted, ifMatch: etag)
        var position = 0
        while position < data.count {
            let delay = delayPer64KiB.load(ordering: .relaxed)
            if delay > 0 { try? await Task.sleep(nanoseconds: UInt64(delay) * 1000) }
            if Task.isCancelled { throw RemoteError(.unreachable, "cancelled") }
            let end = min(data.count, position + 65536)
            let allowed = failAfterBytes.load(ordering: .relaxed) - bytesRead.load(ordering: .relaxed)
            var piece = Data(data[position..<min(end, position + max(0, allowed))])
            let corrupt = corruptOffset.load(ordering: .relaxed)
            let start = Int(wanted.lowerBound) + position
            if corrupt >= start && corrupt < start + piece.count { piece[corrupt - start] ^= 0x01 }
            if !piece.isEmpty {
                bytesRead.wrappingAdd(piece.count, ordering: .relaxed)
                let delivered: Result<Void, RemoteError> = piece.withUnsafeBytes { bytes in
                    Result { () throws(RemoteError) in try consume(bytes) }
                }
                try delivered.get()
            }
            if piece.count < end - position { throw RemoteError(.unreachable, "connection reset mid-body (injected)") }
            position = end
        }
    }
}
