import DarkDiskCrypto
import DarkDiskTestSupport
import Foundation
import Testing

/// Files written by format version 1, committed in Fixtures/, must stay readable by every later version.
/// The fixtures are frozen: they are only rewritten by running the tests with DARKDISK_REGENERATE_FIXTURES=1.
struct FixtureTests {
    static let keyFile = "v1-content-key.hex"
    static let cacheFile = "v1-cache-file.ddsk"
    static let cachePlaintext = "v1-cache-file.plaintext"
    static let cloudFile = "v1-cloud-file.ddsk"
    static let cloudMetadata = "v1-cloud-file.metadata.json"
    static let cloudThumbnail = "v1-cloud-file.thumbnail"
    static let cloudData = "v1-cloud-file.data"

    /// The fixtures as built into the test bundle.
    static func bundled(_ name: String) throws -> String {
        let directory = try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil))
        return directory.appendingPathComponent(name).path
    }

    static func contentKey() throws -> SymmetricKey {
        let text = try String(contentsOfFile: bundled(keyFile), encoding: .utf8)
        let bytes = try #require(Hex.decode(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        return try SymmetricKey(bytes: bytes)
    }

    @Test func cacheFileOfVersion1() throws {
        let key = try Self.contentKey()
        let path = try Self.bundled(Self.cacheFile)
        let expected = try FileBytes.read(Self.bundled(Self.cachePlaintext))
        #expect(expected.count == 10_000)

        let reader = try CryptoFileReader(path: path, key: key)
        #expect(reader.header.version == 1)
        #expect(reader.header.format == .cacheFile)
        #expect(reader.header.chunkSize == 4096)
        #expect(reader.header.sectionSizes == [10_000])
        #expect(try FileConversion.decryptIntoMemory(path: path, key: key) == Data(expected))
        #expect(try reader.read(section: 0, offset: 4000, count: 200) == Array(expected[4000..<4200]))
        #expect(try ReferenceDecoder.decode(FileBytes.read(path), contentKey: key.bytes) == [expected])
    }

    @Test func cloudFileOfVersion1() throws {
        let key = try Self.contentKey()
        let path = try Self.bundled(Self.cloudFile)
        let metadata = try FileBytes.read(Self.bundled(Self.cloudMetadata))
        let thumbnail = try FileBytes.read(Self.bundled(Self.cloudThumbnail))
        let data = try FileBytes.read(Self.bundled(Self.cloudData))

        let reader = try CryptoFileReader(path: path, key: key)
        #expect(reader.header.format == .cloudFile)
        #expect(reader.header.chunkSize == 4096)
        #expect(reader.header.sectionSizes == [UInt64(metadata.count), UInt64(thumbnail.count), UInt64(data.count)])
        #expect(try FileConversion.decryptIntoMemory(path: path, key: key, section: CloudFileSection.metadata.rawValue) == Data(metadata))
        #expect(try FileConversion.decryptIntoMemory(path: path, key: key, section: CloudFileSection.thumbnail.rawValue) == Data(thumbnail))
        #expect(try FileConversion.decryptIntoMemory(path: path, key: key) == Data(data))
        #expect(try ReferenceDecoder.decode(FileBytes.read(path), contentKey: key.bytes) == [metadata, thumbnail, data])
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["DARKDISK_REGENERATE_FIXTURES"] == "1"))
    func regenerateFixtures() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

        let key = SymmetricKey.random()
        try Data((Hex.encode(key.bytes) + "\n").utf8).write(to: URL(fileURLWithPath: path(Self.keyFile)))

        let cachePlaintext = SplitMix64.bytes(10_000, seed: 1)
        try FileBytes.write(cachePlaintext, to: path(Self.cachePlaintext))
        _ = try FileConversion.encrypt(Data(cachePlaintext), key: key, to: path(Self.cacheFile), chunkSize: 4096)

        let metadata = Array(#"{"name":"report.pdf","size":10000,"modified":"2024-05-01T10:00:00Z"}"#.utf8)
        let thumbnail = SplitMix64.bytes(600, seed: 2)
        let data = SplitMix64.bytes(10_000, seed: 3)
        try FileBytes.write(metadata, to: path(Self.cloudMetadata))
        try FileBytes.write(thumbnail, to: path(Self.cloudThumbnail))
        try FileBytes.write(data, to: path(Self.cloudData))
        _ = try FileConversion.encryptCloudFile(metadata: Data(metadata), thumbnail: Data(thumbnail), dataFileAt: path(Self.cloudData),
                                                key: key, to: path(Self.cloudFile), chunkSize: 4096)
    }
}
