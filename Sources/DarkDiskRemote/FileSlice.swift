
import DarkDiskCrypto
import Foundation
import NIOCore
#if canImport(Glibc)
import Glibc
#endif
import DarkDiskSystem

/// A byte range of an open file as an async sequence of buffers read with `pread`, to stream an upload
/// body from disk (a part of a multipart upload, a whole small file) without holding it in memory. The
/// sequence can be iterated again (a retried request resends the same bytes); it keeps the file open while
/// it is used.
struct FileSlice: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    let file: OwnedDescriptor
    let offset: UInt64
    let count: UInt64
    /// The file's path, for messages.
    let path: String
    static let chunkSize = 256 * 1024

    /// A read of the file failed or found it shorter than the slice (it changed during the upload).
    struct ReadError: Error {
        let message: String
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let slice: FileSlice
        var position: UInt64

        mutating func next() async throws -> ByteBuffer? {
            let end = slice.offset + slice.count
            guard position < end else { return nil }
            let wanted = Int(Swift.min(UInt64(FileSlice.chunkSize), end - position))
            var buffer = ByteBufferAllocator().buffer(capacity: wanted)
            try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { (raw: UnsafeMutableRawBufferPointer) throws -> Int in
                try slice.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<wanted]), at: position)
                return wanted
            }
            position += UInt64(wanted)
            return buffer
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(slice: self, position: offset) }

    /// The SHA-256 of the slice in hexadecimal, read in pieces (the payload hash a signed upload needs).
    func sha256() throws(RemoteError) -> String {
        var hasher = Digest.SHA256()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var position = offset
        while position < offset + count {
            let wanted = Int(Swift.min(UInt64(buffer.count), offset + count - position))
            let piece = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted])
            do throws(ReadError) { try read(into: piece, at: position) } catch { throw RemoteError(.io, error.message) }
            hasher.update(UnsafeRawBufferPointer(piece))
            position += UInt64(wanted)
        }
        return Hex.encode(hasher.finalize())
    }

    /// Fills `buffer` from the file at `position`, or throws if the file ends first or cannot be read.
    func read(into buffer: UnsafeMutableRawBufferPointer, at position: UInt64) throws(ReadError) {
        guard buffer.count > 0 else { return }
        let got: Int
        do { got = try file.pread(into: buffer.baseAddress!, count: buffer.count, at: position) } catch {
            throw ReadError(message: "cannot read \(path): \(error)")
        }
        guard got == buffer.count else { throw ReadError(message: "\(path) became shorter while it was uploaded") }
    }
}
