/// The nonce and associated data that bind a chunk to its file, section, position and last-ness, so chunks
/// cannot be moved, reordered, dropped at the end or taken from another file without failing their tag.
enum ChunkParameters {
    /// Bytes `write` fills: the 12-byte nonce followed by the 26-byte AAD.
    static let size = nonceSize + aadSize
    static let nonceSize = GCMContext.nonceSize
    static let aadSize = 16 + 1 + 8 + 1

    /// Writes nonce = [s, 0, 0, 0] || k (UInt64 LE) at `destination`, then
    /// AAD = fileID || s || k (UInt64 LE) || last (1 or 0) right after it.
    static func write(to destination: UnsafeMutableRawPointer, fileID: [UInt8], section: Int, chunk: UInt64, last: Bool) {
        destination.storeBytes(of: UInt8(section), toByteOffset: 0, as: UInt8.self)
        destination.storeBytes(of: 0, toByteOffset: 1, as: UInt8.self)
        destination.storeBytes(of: 0, toByteOffset: 2, as: UInt8.self)
        destination.storeBytes(of: 0, toByteOffset: 3, as: UInt8.self)
        destination.storeBytes(of: chunk.littleEndian, toByteOffset: 4, as: UInt64.self)
        let aad = destination + nonceSize
        for index in 0..<16 {
            aad.storeBytes(of: fileID[index], toByteOffset: index, as: UInt8.self)
        }
        aad.storeBytes(of: UInt8(section), toByteOffset: 16, as: UInt8.self)
        aad.storeBytes(of: chunk.littleEndian, toByteOffset: 17, as: UInt64.self)
        aad.storeBytes(of: last ? 1 : 0, toByteOffset: 25, as: UInt8.self)
    }

    /// The nonce within a buffer filled by `write`.
    static func nonce(in buffer: UnsafeMutableRawPointer) -> UnsafeRawPointer {
        UnsafeRawPointer(buffer)
    }

    /// The AAD within a buffer filled by `write`.
    static func aad(in buffer: UnsafeMutableRawPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: buffer + nonceSize, count: aadSize)
    }
}
