import DarkDiskCrypto
import DarkDiskTestSupport
import Foundation
import Testing

/// The module's output agrees with the documented byte format, as decoded by `ReferenceDecoder`.
struct FormatSpecTests {
    @Test(arguments: [CryptoFileFormat.cacheFile, .cloudFile])
    func writtenFilesFollowTheSpecification(format: CryptoFileFormat) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = SymmetricKey.random()
        let path = directory.file("file")
        let fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o600)
        defer { close(fd) }
        let writer = try CryptoFileWriter(fileDescriptor: fd, key: key, format: format, chunkSize: 4096)
        let sections = (0..<format.sectionCount).map { SplitMix64.bytes([9000, 4096, 12_289][$0], seed: UInt64($0)) }
        for section in sections {
            try writer.append(Data(section))
            try writer.endSection()
        }
        let header = try writer.finish()
        let file = try FileBytes.read(path)
        #expect(Array(file[16..<32]) == header.fileID)
        #expect(try ReferenceDecoder.decode(file, contentKey: key.bytes) == sections)
    }

    @Test func keyWrapFollowsTheSpecification() throws {
        let wrapping = SymmetricKey.random()
        let key = SymmetricKey.random()
        let wrapped = wrapping.wrap(key)
        let unwrapped = ReferenceDecoder.open(key: wrapping.bytes, nonce: Array(wrapped[0..<12]), aad: Array("darkdisk key wrap v1".utf8),
                                              ciphertext: Array(wrapped[12..<44]), tag: Array(wrapped[44..<60]))
        #expect(unwrapped == key.bytes)
    }

    @Test func theLastChunkFlagIsAuthenticated() throws {
        // A header that claims one chunk fewer (validly tagged, so only a key holder could write it) turns
        // the former second-to-last chunk into the last one; its AAD then differs and it must not verify.
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = SymmetricKey.random()
        let path = directory.file("file")
        let plaintext = SplitMix64.bytes(3 * 4096 + 10, seed: 8)
        let header = try FileConversion.encrypt(Data(plaintext), key: key, to: path, chunkSize: 4096)
        var file = try FileBytes.read(path)
        file.removeSubrange((80 + 3 * (4096 + 16))...)
        file.replaceSubrange(0..<80, with: ReferenceDecoder.header(format: 1, chunkSize: 4096, fileID: header.fileID,
                                                                   sizes: [3 * 4096], contentKey: key.bytes))
        try FileBytes.write(file, to: path)

        let reader = try CryptoFileReader(path: path, key: key)
        #expect(try reader.read(section: 0, offset: 0, count: 2 * 4096) == Array(plaintext[0..<(2 * 4096)]))
        let error = try #require(throws: CryptoError.self) { _ = try reader.read(section: 0, offset: 2 * 4096, count: 1) }
        #expect(error.code == .chunkAuthenticationFailed && error.chunk == 2)
    }
}
