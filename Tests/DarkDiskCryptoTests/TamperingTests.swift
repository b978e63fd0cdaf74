import DarkDiskCrypto
import DarkDiskTestSupport
import Foundation
import Testing

/// Every modification of an encrypted file is reported as a typed error, and never as wrong plaintext.
struct TamperingTests {
    static let chunkSize = 4096
    static let stride = chunkSize + 16
    /// Five full chunks and a short sixth one.
    static let plaintext = SplitMix64.bytes(5 * chunkSize + 100, seed: 11)

    /// A fresh encrypted file of `plaintext` in a temporary directory.
    struct Fixture {
        let directory: TemporaryDirectory
        let key: SymmetricKey
        let path: String

        init(key: SymmetricKey = .random()) throws {
            directory = try TemporaryDirectory()
            self.key = key
            path = directory.file("file")
            _ = try FileConversion.encrypt(Data(TamperingTests.plaintext), key: key, to: path,
                                           chunkSize: UInt32(TamperingTests.chunkSize))
        }

        /// Byte offset of chunk `chunk` of the (only) section.
        func offset(ofChunk chunk: Int) -> Int { 80 + chunk * TamperingTests.stride }

        func openError() -> CryptoError? {
            #expect(throws: CryptoError.self) { _ = try CryptoFileReader(path: path, key: key) }
        }

        /// The error of decrypting the whole file, which must not succeed.
        func readError() throws -> CryptoError {
            let reader = try CryptoFileReader(path: path, key: key)
            return try #require(throws: CryptoError.self) {
                _ = try reader.read(section: 0, offset: 0, count: TamperingTests.plaintext.count)
            }
        }
    }

    @Test(arguments: [CryptoFileFormat.cacheFile, .cloudFile])
    func everyHeaderBitFlipIsDetectedAtOpen(format: CryptoFileFormat) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = SymmetricKey.random()
        let path = directory.file("file")
        _ = try FileConversion.encrypt(Data(Self.plaintext), key: key, format: format, to: path, chunkSize: UInt32(Self.chunkSize))
        let original = try FileBytes.read(path)
        for bit in 0..<(80 * 8) {
            var bytes = original
            bytes[bit / 8] ^= 1 << (bit % 8)
            try FileBytes.write(bytes, to: path)
            let error = try #require(throws: CryptoError.self, "bit \(bit)") {
                _ = try CryptoFileReader(path: path, key: key)
            }
            let expected: CryptoError.Code = switch bit / 8 {
            case 0..<4: .badMagic
            case 4: .unsupportedVersion
            case 5..<16, 56..<64: .malformedHeader
            case 40..<56 where format == .cacheFile: .malformedHeader
            default: .wrongKey
            }
            #expect(error.code == expected, "bit \(bit): \(error)")
        }
    }

    @Test func flippedBitInAChunkBody() throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        try FileBytes.modify(fixture.path) { $0[fixture.offset(ofChunk: 2) + 1000] ^= 0x10 }
        let error = try fixture.readError()
        #expect(error.code == .chunkAuthenticationFailed)
        #expect(error.section == 0 && error.chunk == 2)

        let reader = try CryptoFileReader(path: fixture.path, key: fixture.key)
        #expect(try reader.read(section: 0, offset: 0, count: 2 * Self.chunkSize) == Array(Self.plaintext[0..<(2 * Self.chunkSize)]),
                "other chunks stay readable")
        let tail = 3 * Self.chunkSize
        #expect(try reader.read(section: 0, offset: UInt64(tail), count: Self.plaintext.count) == Array(Self.plaintext[tail...]))
    }

    @Test func failedReadLeavesNoPlaintextInTheBuffer() throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        try FileBytes.modify(fixture.path) { $0[fixture.offset(ofChunk: 3) + 5] ^= 1 }
        let reader = try CryptoFileReader(path: fixture.path, key: fixture.key)
        var buffer = [UInt8](repeating: 0xA5, count: Self.plaintext.count)
        let error = try #require(throws: CryptoError.self) {
            _ = try buffer.withUnsafeMutableBytes { try reader.read(section: 0, offset: 0, count: $0.count, into: $0) }
        }
        #expect(error.chunk == 3)
        #expect(buffer.allSatisfy { $0 == 0 })
    }

    @Test func flippedBitInATag() throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        try FileBytes.modify(fixture.path) { $0[fixture.offset(ofChunk: 4) + Self.chunkSize + 7] ^= 0x80 }
        let error = try fixture.readError()
        #expect(error.code == .chunkAuthenticationFailed && error.chunk == 4)
    }

    @Test func flippedBitInTheShortLastChunk() throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        try FileBytes.modify(fixture.path) { $0[$0.count - 1] ^= 1 }
        let error = try fixture.readError()
        #expect(error.code == .chunkAuthenticationFailed && error.chunk == 5)
    }

    @Test func swappedChunks() throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        try FileBytes.modify(fixture.path) { bytes in
            let first = fixture.offset(ofChunk: 1)
            let second = fixture.offset(ofChunk: 2)
            let chunkOne = Array(bytes[first..<(first + Self.stride)])
            bytes.replaceSubrange(first..<(first + Self.stride), with: bytes[second..<(second + Self.stride)])
            bytes.replaceSubrange(second..<(second + Self.stride), with: chunkOne)
        }
        let error = try fixture.readError()
        #expect(error.code == .chunkAuthenticationFailed && error.chunk == 1)
        let reader = try CryptoFileReader(path: fixture.path, key: fixture.key)
        let second = try #require(throws: CryptoError.self) {
            _ = try reader.read(section: 0, offset: UInt64(2 * Self.chunkSize), count: 1)
        }
        #expect(second.chunk == 2)
    }

    @Test func chunkCopiedFromAnotherFileWithTheSameKey() throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        let other = try Fixture(key: fixture.key)
        defer { other.directory.remove() }
        let otherBytes = try FileBytes.read(other.path)
        try FileBytes.modify(fixture.path) { bytes in
            let start = fixture.offset(ofChunk: 3)
            bytes.replaceSubrange(start..<(start + Self.stride), with: otherBytes[start..<(start + Self.stride)])
        }
        let error = try fixture.readError()
        #expect(error.code == .chunkAuthenticationFailed && error.section == 0 && error.chunk == 3)
    }

    @Test(arguments: [
        ("at a chunk boundary", 80 + 5 * TamperingTests.stride),
        ("inside a chunk", 80 + 2 * TamperingTests.stride + 1000),
        ("inside the last chunk", 80 + 5 * TamperingTests.stride + 50),
        ("to the header", 80),
        ("inside the header", 40),
    ])
    func truncation(_ where: String, length: Int) throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        try FileBytes.modify(fixture.path) { $0.removeSubrange(length...) }
        #expect(fixture.openError()?.code == .truncated, "truncated \(`where`)")
    }

    @Test func emptyFileIsTruncated() throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        try FileBytes.write([], to: fixture.path)
        #expect(fixture.openError()?.code == .truncated)
    }

    @Test func extensionByOneByte() throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        try FileBytes.modify(fixture.path) { $0.append(0) }
        #expect(fixture.openError()?.code == .extended)
    }

    @Test func wrongKey() throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        let error = #expect(throws: CryptoError.self) { _ = try CryptoFileReader(path: fixture.path, key: .random()) }
        #expect(error?.code == .wrongKey)
        let memory = #expect(throws: CryptoError.self) {
            _ = try FileConversion.decryptIntoMemory(path: fixture.path, key: .random())
        }
        #expect(memory?.code == .wrongKey)
    }

    @Test func notADarkdiskFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("plain")
        try FileBytes.write(Array("just some text that is long enough to look like a header, but is not one at all.".utf8), to: path)
        let error = #expect(throws: CryptoError.self) { _ = try CryptoFileReader(path: path, key: .random()) }
        #expect(error?.code == .badMagic)
        let missing = #expect(throws: CryptoError.self) { _ = try CryptoFileReader(path: directory.file("missing"), key: .random()) }
        #expect(missing?.code == .io && missing?.errno == ENOENT)
    }

    @Test func swappedSectionsOfACloudFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = SymmetricKey.random()
        let source = directory.file("content")
        try FileBytes.write(SplitMix64.bytes(4096, seed: 5), to: source)
        let path = directory.file("cloud")
        let thumbnail = Data(SplitMix64.bytes(4096, seed: 6))
        let header = try FileConversion.encryptCloudFile(metadata: nil, thumbnail: thumbnail, dataFileAt: source, key: key,
                                                         to: path, chunkSize: 4096)
        try FileBytes.modify(path) { bytes in
            let thumbnailStart = Int(header.sectionOffset(1))
            let dataStart = Int(header.sectionOffset(2))
            let thumbnailChunk = Array(bytes[thumbnailStart..<dataStart])
            bytes.replaceSubrange(thumbnailStart..<dataStart, with: bytes[dataStart...])
            bytes.replaceSubrange(dataStart..., with: thumbnailChunk)
        }
        let reader = try CryptoFileReader(path: path, key: key)
        for section in 1...2 {
            let error = try #require(throws: CryptoError.self) { _ = try reader.read(section: section, offset: 0, count: 10) }
            #expect(error.code == .chunkAuthenticationFailed && error.section == section && error.chunk == 0)
        }
    }

    @Test func chunkStreamReportsTampering() async throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        try FileBytes.modify(fixture.path) { $0[fixture.offset(ofChunk: 1)] ^= 4 }
        var chunks = 0
        do {
            for try await _ in CryptoFileChunks(path: fixture.path, key: fixture.key) { chunks += 1 }
            Issue.record("tampered stream finished without an error")
        } catch {
            #expect(error.code == .chunkAuthenticationFailed && error.chunk == 1)
        }
        #expect(chunks == 1)
    }
}
