import DarkDiskCrypto
import DarkDiskTestSupport
import Foundation
import Testing

/// Encrypting and decrypting through every path gives back the plaintext, for both formats, at the sizes
/// around chunk boundaries.
struct RoundTripTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let format: CryptoFileFormat
        let chunkSize: UInt32
        let size: Int

        var testDescription: String { "\(format) cs=\(chunkSize) size=\(size)" }
    }

    static let cases: [Case] = [CryptoFileFormat.cacheFile, .cloudFile].flatMap { format in
        [UInt32(4096), CryptoFormat.defaultChunkSize].flatMap { chunkSize in
            let cs = Int(chunkSize)
            return [0, 1, cs - 1, cs, cs + 1, 3 << 20 + 7].map { Case(format: format, chunkSize: chunkSize, size: $0) }
        }
    }

    @Test(arguments: cases)
    func roundTrip(_ testCase: Case) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = SymmetricKey.random()
        let plaintext = SplitMix64.bytes(testCase.size, seed: UInt64(testCase.size))
        let source = directory.file("plain")
        try FileBytes.write(plaintext, to: source)

        var encrypted: [String] = []
        let fromData = directory.file("from-data")
        let header = try FileConversion.encrypt(Data(plaintext), key: key, format: testCase.format, to: fromData,
                                                chunkSize: testCase.chunkSize)
        #expect(header.format == testCase.format)
        #expect(header.chunkSize == testCase.chunkSize)
        #expect(header.sectionSizes.last == UInt64(testCase.size))
        #expect(header.fileLength == UInt64(try FileBytes.read(fromData).count))
        encrypted.append(fromData)

        let fromFile = directory.file("from-file")
        switch testCase.format {
        case .cacheFile:
            _ = try FileConversion.encrypt(fileAt: source, key: key, to: fromFile, chunkSize: testCase.chunkSize)
        case .cloudFile:
            _ = try FileConversion.encryptCloudFile(metadata: nil, thumbnail: nil, dataFileAt: source, key: key, to: fromFile,
                                                    chunkSize: testCase.chunkSize)
        }
        encrypted.append(fromFile)

        if testCase.format == .cacheFile {
            let fromPipe = directory.file("from-pipe")
            _ = try PipeFeeder.withPipe(feeding: plaintext) { fd in
                try FileConversion.encrypt(fileDescriptor: fd, key: key, to: fromPipe, chunkSize: testCase.chunkSize)
            }
            encrypted.append(fromPipe)
        }

        for path in encrypted {
            #expect(try FileConversion.decryptIntoMemory(path: path, key: key) == Data(plaintext), "\(path)")

            let output = directory.file("decrypted")
            try FileConversion.decrypt(path: path, key: key, toFileAt: output)
            #expect(try FileBytes.read(output) == plaintext, "\(path)")

            var streamed = Data()
            var chunkLengths: [Int] = []
            for try await chunk in CryptoFileChunks(path: path, key: key) {
                streamed.append(chunk)
                chunkLengths.append(chunk.count)
            }
            #expect(streamed == Data(plaintext), "\(path)")
            let cs = Int(testCase.chunkSize)
            #expect(chunkLengths.count == (testCase.size + cs - 1) / cs)
            #expect(chunkLengths.dropLast().allSatisfy { $0 == cs })

            let reader = try CryptoFileReader(path: path, key: key)
            #expect(reader.header.format == header.format)
            #expect(reader.header.chunkSize == header.chunkSize)
            #expect(reader.header.sectionSizes == header.sectionSizes)
        }
        let fileIDs = try encrypted.map { try CryptoFileReader(path: $0, key: key).header.fileID }
        #expect(Set(fileIDs).count == fileIDs.count, "every file gets its own file ID")
    }
}
