import DarkDiskCrypto
import DarkDiskTestSupport
import Foundation
import Testing

/// Cloud files keep metadata, thumbnail and data in separate sections that can be read on their own.
struct CloudFileTests {
    static let metadata = Data(#"{"name":"holiday.jpg","size":20000,"modified":"2024-05-01T10:00:00Z"}"#.utf8)
    static let thumbnail = SplitMix64.bytes(5000, seed: 2)
    static let content = SplitMix64.bytes(20_000, seed: 3)

    @Test func sectionsAreReadableIndependently() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = SymmetricKey.random()
        let source = directory.file("content")
        try FileBytes.write(Self.content, to: source)
        let path = directory.file("cloud")
        let header = try FileConversion.encryptCloudFile(metadata: Self.metadata, thumbnail: Data(Self.thumbnail),
                                                         dataFileAt: source, key: key, to: path, chunkSize: 4096)
        #expect(header.sectionSizes == [UInt64(Self.metadata.count), 5000, 20_000])

        let reader = try CryptoFileReader(path: path, key: key)
        #expect(reader.dataSection == CloudFileSection.data.rawValue)
        #expect(try reader.read(section: CloudFileSection.metadata.rawValue, offset: 0, count: 1000) == [UInt8](Self.metadata))
        #expect(try reader.read(section: CloudFileSection.thumbnail.rawValue, offset: 4000, count: 2000) == Array(Self.thumbnail[4000...]))
        #expect(try reader.read(section: CloudFileSection.data.rawValue, offset: 4090, count: 10) == Array(Self.content[4090..<4100]))

        #expect(try FileConversion.decryptIntoMemory(path: path, key: key, section: 0) == Self.metadata)
        #expect(try FileConversion.decryptIntoMemory(path: path, key: key, section: 1) == Data(Self.thumbnail))
        #expect(try FileConversion.decryptIntoMemory(path: path, key: key) == Data(Self.content))
        var thumbnailChunks = Data()
        for try await chunk in CryptoFileChunks(path: path, key: key, section: CloudFileSection.thumbnail.rawValue) {
            thumbnailChunks.append(chunk)
        }
        #expect(thumbnailChunks == Data(Self.thumbnail))
    }

    @Test func sectionOffsetsMatchTheFileLayout() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = SymmetricKey.random()
        let source = directory.file("content")
        try FileBytes.write(Self.content, to: source)
        let path = directory.file("cloud")
        let header = try FileConversion.encryptCloudFile(metadata: Self.metadata, thumbnail: Data(Self.thumbnail),
                                                         dataFileAt: source, key: key, to: path, chunkSize: 4096)
        let metadataLength = UInt64(Self.metadata.count) + 16
        let thumbnailLength = UInt64(5000 + 2 * 16)
        let contentLength = UInt64(20_000 + 5 * 16)
        #expect(header.chunkCount(ofSection: 0) == 1)
        #expect(header.chunkCount(ofSection: 1) == 2)
        #expect(header.chunkCount(ofSection: 2) == 5)
        #expect(header.ciphertextLength(ofSection: 0) == metadataLength)
        #expect(header.ciphertextLength(ofSection: 1) == thumbnailLength)
        #expect(header.ciphertextLength(ofSection: 2) == contentLength)
        #expect(header.sectionOffset(0) == 80)
        #expect(header.sectionOffset(1) == 80 + metadataLength)
        #expect(header.sectionOffset(2) == 80 + metadataLength + thumbnailLength)
        #expect(header.fileLength == 80 + metadataLength + thumbnailLength + contentLength)
        #expect(UInt64(try FileBytes.read(path).count) == header.fileLength)

        // Corrupting the first byte of each section's ciphertext must break exactly that section's chunk 0.
        for section in 0..<3 {
            let copy = directory.file("copy-\(section)")
            var bytes = try FileBytes.read(path)
            bytes[Int(header.sectionOffset(section))] ^= 1
            try FileBytes.write(bytes, to: copy)
            let reader = try CryptoFileReader(path: copy, key: key)
            for other in 0..<3 {
                let result = Result { try reader.read(section: other, offset: 0, count: 1) }
                if other == section {
                    let error = try #require(throws: CryptoError.self) { try result.get() }
                    #expect(error.code == .chunkAuthenticationFailed && error.section == section && error.chunk == 0)
                } else {
                    #expect(throws: Never.self) { try result.get() }
                }
            }
        }
    }

    @Test func emptySectionsAndDataOnlyCloudFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = SymmetricKey.random()
        let path = directory.file("cloud")
        let header = try FileConversion.encrypt(Data(Self.content), key: key, format: .cloudFile, to: path, chunkSize: 4096)
        #expect(header.sectionSizes == [0, 0, 20_000])
        #expect(header.sectionOffset(1) == 80 && header.sectionOffset(2) == 80)
        let reader = try CryptoFileReader(path: path, key: key)
        #expect(try reader.read(section: 0, offset: 0, count: 10).isEmpty)
        #expect(try FileConversion.decryptIntoMemory(path: path, key: key, section: 1).isEmpty)
    }
}
