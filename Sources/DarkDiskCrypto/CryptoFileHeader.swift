/// The authenticated 80-byte header that starts every encrypted file, and the layout it implies: where each
/// section starts, how long its ciphertext is, and how long the whole file must be.
public struct CryptoFileHeader: Sendable, Equatable {
    public let version: UInt8
    public let format: CryptoFileFormat
    /// Plaintext bytes per chunk (a power of two in 4096...4 MiB).
    public let chunkSize: UInt32
    /// The file's random 16-byte ID, from which its file key is derived.
    public let fileID: [UInt8]
    /// Plaintext size of each section; `count == format.sectionCount`.
    public let sectionSizes: [UInt64]

    /// Byte offset of `section`'s first chunk; `sectionOffset(format.sectionCount)` is the file length.
    public func sectionOffset(_ section: Int) -> UInt64 {
        precondition(section >= 0 && section <= sectionSizes.count, "section \(section) out of range")
        var offset = UInt64(CryptoFormat.headerSize)
        for index in 0..<section {
            offset += ciphertextLength(ofSection: index)
        }
        return offset
    }

    /// Bytes `section` occupies on disk: its plaintext size plus one tag per chunk.
    public func ciphertextLength(ofSection section: Int) -> UInt64 {
        sectionSizes[section] + UInt64(CryptoFormat.tagSize) * chunkCount(ofSection: section)
    }

    /// The exact length a well-formed file with this header has.
    public var fileLength: UInt64 {
        sectionOffset(sectionSizes.count)
    }

    /// Number of chunks of `section`: ceil(size / chunkSize), 0 for an empty section.
    public func chunkCount(ofSection section: Int) -> UInt64 {
        let size = sectionSizes[section]
        let chunkSize = UInt64(chunkSize)
        return size / chunkSize + (size % chunkSize == 0 ? 0 : 1)
    }

    /// The bytes of the file that a read of plaintext [offset, offset + count) of `section` needs: the
    /// ciphertext and tags of the chunks covering it (empty for an empty read or one at the end). A client
    /// that fetches or waits for byte ranges asks for exactly these.
    public func ciphertextRange(section: Int, offset: UInt64, count: Int) -> Range<UInt64> {
        let size = sectionSizes[section]
        guard offset < size, count > 0 else { return sectionOffset(section)..<sectionOffset(section) }
        let end = min(size, offset + UInt64(count))
        let chunkSize = UInt64(chunkSize)
        let stride = chunkSize + UInt64(CryptoFormat.tagSize)
        let first = offset / chunkSize
        let last = (end - 1) / chunkSize
        let start = sectionOffset(section) + first * stride
        return start..<start + (last - first) * stride + UInt64(plaintextLength(ofChunk: last, section: section) + CryptoFormat.tagSize)
    }

    /// Plaintext length of chunk `chunk` of `section`: the chunk size, except for a short last chunk.
    func plaintextLength(ofChunk chunk: UInt64, section: Int) -> Int {
        let start = chunk * UInt64(chunkSize)
        return Int(min(UInt64(chunkSize), sectionSizes[section] - start))
    }
}
