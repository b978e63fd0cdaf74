@testable import DarkDiskCrypto
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The drive's staging file (Docs/FORMAT.md, "Staging files"), checked against the documented layout with
/// the independent `ReferenceDecoder`: every write of a chunk gets a fresh nonce, nothing of the plaintext
/// reaches the disk, and a changed, moved or copied chunk fails its tag, naming the chunk.
@Suite struct StagingCryptoFileTests {
    static let chunk = 65536
    static let stride = 12 + chunk + 16

    /// The staging file's bytes on disk, through its descriptor (it has no name).
    static func raw(_ file: StagingCryptoFile) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: "/proc/self/fd/\(file.fd)")))
    }

    static func pattern(_ seed: UInt8) -> [UInt8] {
        (0..<chunk).map { UInt8(truncatingIfNeeded: Int(seed) &+ $0 / 7) }
    }

    @Test func aRewrittenChunkGetsAFreshNonceAndOpensAsDocumented() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try StagingCryptoFile(directory: directory.path)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty, "no name in the folder")
        var nonces: Set<[UInt8]> = []
        for (index, seed) in [UInt8(1), 2, 3].enumerated() {
            let plaintext = Self.pattern(seed)
            try plaintext.withUnsafeBytes { try file.write(chunk: 1, from: $0.baseAddress!) }
            let bytes = try Self.raw(file)
            #expect(bytes.count == 2 * Self.stride)
            let slot = Array(bytes[Self.stride..<2 * Self.stride])
            let nonce = Array(slot[0..<12])
            nonces.insert(nonce)
            #expect(nonces.count == index + 1, "write \(index + 1) of chunk 1 reused a nonce")
            let opened = ReferenceDecoder.open(key: file.key, nonce: nonce, aad: file.fileID + ReferenceDecoder.littleEndianBytes(1),
                                               ciphertext: Array(slot[12..<12 + Self.chunk]), tag: Array(slot[(12 + Self.chunk)...]))
            #expect(opened == plaintext, "the slot opens with the documented nonce, AAD and key")
            // No run of the plaintext is on disk.
            #expect(bytes.firstRange(of: plaintext[1000..<1064]) == nil)
        }
        #expect(file.contains(1) && !file.contains(0))
        var buffer = [UInt8](repeating: 0, count: Self.chunk)
        #expect(try buffer.withUnsafeMutableBytes { try file.read(chunk: 0, into: $0.baseAddress!) } == false, "a chunk never written")
        #expect(try buffer.withUnsafeMutableBytes { try file.read(chunk: 1, into: $0.baseAddress!) } == true)
        #expect(buffer == Self.pattern(3))
        try file.removeChunks(from: 1)
        #expect(!file.contains(1))
        #expect(try Self.raw(file).count == Self.stride)
    }

    @Test func aChangedOrMovedChunkFailsNamingIt() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try StagingCryptoFile(directory: directory.path)
        for index in 0..<3 {
            try Self.pattern(UInt8(index)).withUnsafeBytes { try file.write(chunk: UInt64(index), from: $0.baseAddress!) }
        }
        var buffer = [UInt8](repeating: 0, count: Self.chunk)
        func read(_ chunk: UInt64) throws -> Bool { try buffer.withUnsafeMutableBytes { try file.read(chunk: chunk, into: $0.baseAddress!) } }
        // A flipped bit in chunk 2's ciphertext.
        var byte: UInt8 = 0
        #expect(pread(file.fd, &byte, 1, off_t(2 * Self.stride + 500)) == 1)
        byte ^= 0x10
        #expect(pwrite(file.fd, &byte, 1, off_t(2 * Self.stride + 500)) == 1)
        #expect { try read(2) } throws: { ($0 as? CryptoError)?.code == .chunkAuthenticationFailed && ($0 as? CryptoError)?.chunk == 2 }
        // Chunk 0's slot copied over chunk 1's: the AAD binds the position.
        var slot = [UInt8](repeating: 0, count: Self.stride)
        #expect(pread(file.fd, &slot, Self.stride, 0) == Self.stride)
        #expect(pwrite(file.fd, slot, Self.stride, off_t(Self.stride)) == Self.stride)
        #expect { try read(1) } throws: { ($0 as? CryptoError)?.chunk == 1 }
        #expect(try read(0), "the untouched chunk still reads")
        #expect(buffer == Self.pattern(0))
    }
}
