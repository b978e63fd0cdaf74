import DarkDiskCrypto
import DarkDiskTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `CryptoFileWriter` used directly: many small appends, misuse, and I/O failures.
struct WriterTests {
    /// A new empty file `name` in `directory`, open for reading and writing.
    static func scratch(_ directory: TemporaryDirectory, _ name: String) throws -> (path: String, fd: Int32) {
        let path = directory.file(name)
        let fd = open(path, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        return (path, fd)
    }

    @Test func manySmallAppendsAcrossSections() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = SymmetricKey.random()
        let (_, fd) = try Self.scratch(directory, "cloud")
        defer { close(fd) }
        let writer = try CryptoFileWriter(fileDescriptor: fd, key: key, format: .cloudFile, chunkSize: 4096)
        var generator = SplitMix64(seed: 99)
        var sections: [[UInt8]] = [[], [], []]
        for section in 0..<3 {
            let total = [300, 0, 50_000][section]
            var written = 0
            while written < total {
                let piece = SplitMix64.bytes(min(total - written, Int.random(in: 1...9000, using: &generator)), seed: UInt64(written))
                try writer.append(Data(piece))
                sections[section] += piece
                written += piece.count
            }
            if section < 2 { try writer.endSection() }
        }
        let header = try writer.finish()
        #expect(header.sectionSizes == [300, 0, 50_000])

        let reader = try CryptoFileReader(takingOwnershipOf: dup(fd), key: key)
        #expect(reader.header == header)
        for section in 0..<3 {
            #expect(try reader.read(section: section, offset: 0, count: 60_000) == sections[section])
        }
    }

    /// The reader made from what the writer knows reads what one that authenticates the file reads, and a
    /// chunk damaged on disk afterwards still fails, naming the file (it trusts the header, never the chunks).
    @Test func aReaderOfAFinishedFileNeedsNoSecondOpen() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = SymmetricKey.random()
        let (path, fd) = try Self.scratch(directory, "finished")
        defer { close(fd) }
        let writer = try CryptoFileWriter(fileDescriptor: fd, key: key, format: .cacheFile, chunkSize: 4096)
        #expect(writer.finishedFile == nil)
        let bytes = SplitMix64.bytes(20_000, seed: 5)
        try writer.append(Data(bytes))
        let header = try writer.finish()
        let finished = try #require(writer.finishedFile)
        #expect(finished.header == header)

        final class Holder: Sendable {}
        let fromWriter = CryptoFileReader(finished: finished, fileDescriptor: fd, owner: Holder())
        let authenticated = try CryptoFileReader(path: path, key: key)
        #expect(fromWriter.header == authenticated.header)
        #expect(try fromWriter.read(section: 0, offset: 0, count: 30_000) == bytes)
        #expect(try fromWriter.read(section: 0, offset: 12_345, count: 100) == Array(bytes[12_345..<12_445]))

        // Flip a bit of the second chunk on disk.
        var byte: UInt8 = 0
        let offset = off_t(CryptoFormat.headerSize + 4096 + 16 + 100)
        #expect(pread(fd, &byte, 1, offset) == 1)
        byte ^= 1
        #expect(pwrite(fd, &byte, 1, offset) == 1)
        let error = #expect(throws: CryptoError.self) { _ = try fromWriter.read(section: 0, offset: 4096, count: 10) }
        #expect(error?.chunk == 1)
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
    }

    @Test func callsAfterFinishOrPastTheLastSectionFail() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let fd = open(directory.file("file"), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o600)
        defer { close(fd) }
        let writer = try CryptoFileWriter(fileDescriptor: fd, key: .random(), format: .cacheFile)
        try writer.append(Data([1, 2, 3]))
        try writer.endSection()
        #expect(throws: CryptoError.self) { try writer.append(Data([4])) }
        #expect(throws: CryptoError.self) { try writer.endSection() }
        _ = try writer.finish()
        let error = #expect(throws: CryptoError.self) { _ = try writer.finish() }
        #expect(error?.code == .outOfRange)
    }

    @Test(arguments: [UInt32(0), 1000, 2048, 4097, 8 << 20])
    func invalidChunkSizesAreRejected(_ chunkSize: UInt32) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let error = #expect(throws: CryptoError.self) {
            _ = try FileConversion.encrypt(Data([1]), key: .random(), to: directory.file("file"), chunkSize: chunkSize)
        }
        #expect(error?.code == .outOfRange)
        #expect(!FileManager.default.fileExists(atPath: directory.file("file")), "partial output removed")
    }

    @Test func fullDiskSurfacesAsENOSPC() throws {
        let fd = open("/dev/full", O_WRONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        let writer = try CryptoFileWriter(fileDescriptor: fd, key: .random(), format: .cacheFile, chunkSize: 4096)
        let error = #expect(throws: CryptoError.self) {
            try writer.append(Data(count: 10_000))
            _ = try writer.finish()
        }
        #expect(error?.code == .io)
        #expect(error?.errno == ENOSPC)
        let again = #expect(throws: CryptoError.self) { _ = try writer.finish() }
        #expect(again == error, "a failed writer keeps reporting its failure")
    }

    @Test func unreadableSourceLeavesNoOutput() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let output = directory.file("out")
        let missing = #expect(throws: CryptoError.self) {
            _ = try FileConversion.encrypt(fileAt: directory.file("missing"), key: .random(), to: output)
        }
        #expect(missing?.code == .io && missing?.errno == ENOENT)
        let directoryAsSource = #expect(throws: CryptoError.self) {
            _ = try FileConversion.encrypt(fileAt: directory.path, key: .random(), to: output)
        }
        #expect(directoryAsSource?.code == .io && directoryAsSource?.errno == EISDIR)
        #expect(directoryAsSource?.message.contains(directory.path) == true)
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    @Test func outputFilesArePrivate() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = SymmetricKey.random()
        let path = directory.file("file")
        _ = try FileConversion.encrypt(Data([1, 2, 3]), key: key, to: path)
        let plain = directory.file("plain")
        try FileConversion.decrypt(path: path, key: key, toFileAt: plain)
        for file in [path, plain] {
            let permissions = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
            #expect(permissions == 0o600)
        }
    }

    @Test func failedDecryptionLeavesNoOutput() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = SymmetricKey.random()
        let path = directory.file("file")
        _ = try FileConversion.encrypt(Data(SplitMix64.bytes(20_000, seed: 1)), key: key, to: path, chunkSize: 4096)
        try FileBytes.modify(path) { $0[$0.count - 20] ^= 1 }
        let output = directory.file("plain")
        let error = #expect(throws: CryptoError.self) { try FileConversion.decrypt(path: path, key: key, toFileAt: output) }
        #expect(error?.code == .chunkAuthenticationFailed && error?.chunk == 4)
        #expect(!FileManager.default.fileExists(atPath: output))
    }
}
