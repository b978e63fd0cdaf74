import DarkDiskCrypto
import DarkDiskTestSupport
import Foundation
import Testing

/// Random-access reads return exactly the plaintext's bytes, wherever they start and end.
struct RandomReadTests {
    static let chunkSize = 4096
    static let plaintext = SplitMix64.bytes(13 * chunkSize + 1234, seed: 42)

    @Test func thousandRandomReadsMatchThePlaintext() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = SymmetricKey.random()
        let path = directory.file("file")
        _ = try FileConversion.encrypt(Data(Self.plaintext), key: key, to: path, chunkSize: UInt32(Self.chunkSize))
        let reader = try CryptoFileReader(path: path, key: key)
        let size = Self.plaintext.count
        var generator = SplitMix64(seed: 7)
        var sentinelBuffer = [UInt8](repeating: 0, count: 4 * Self.chunkSize + 8)

        for iteration in 0..<1000 {
            let offset: Int
            let count: Int
            switch iteration % 5 {
            case 0:
                let boundary = Int.random(in: 1...(size / Self.chunkSize), using: &generator) * Self.chunkSize
                offset = boundary - Int.random(in: 0...16, using: &generator)
                count = Int.random(in: 0...(2 * Self.chunkSize), using: &generator)
            case 1:
                offset = size - Int.random(in: 0...100, using: &generator)
                count = Int.random(in: 0...200, using: &generator)
            case 2:
                offset = Int.random(in: 0...size, using: &generator)
                count = 0
            default:
                offset = Int.random(in: 0...size, using: &generator)
                count = Int.random(in: 0...(4 * Self.chunkSize), using: &generator)
            }
            let expected = Array(Self.plaintext[offset..<min(size, offset + count)])

            for index in sentinelBuffer.indices { sentinelBuffer[index] = 0xA5 }
            let written = try sentinelBuffer.withUnsafeMutableBytes { buffer in
                try reader.read(section: 0, offset: UInt64(offset), count: count, into: buffer)
            }
            #expect(written == expected.count, "offset \(offset) count \(count)")
            #expect(Array(sentinelBuffer[0..<written]) == expected, "offset \(offset) count \(count)")
            #expect(sentinelBuffer[written...].allSatisfy { $0 == 0xA5 }, "wrote past the returned count")

            #expect(try reader.read(section: 0, offset: UInt64(offset), count: count) == expected)
        }
    }

    @Test func readsPastTheEnd() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = SymmetricKey.random()
        let path = directory.file("file")
        _ = try FileConversion.encrypt(Data(Self.plaintext), key: key, to: path, chunkSize: UInt32(Self.chunkSize))
        let reader = try CryptoFileReader(path: path, key: key)
        let size = UInt64(Self.plaintext.count)

        #expect(try reader.read(section: 0, offset: size, count: 100).isEmpty)
        let error = #expect(throws: CryptoError.self) { try reader.read(section: 0, offset: size + 1, count: 1) }
        #expect(error?.code == .outOfRange)
        let noSection = #expect(throws: CryptoError.self) { try reader.read(section: 1, offset: 0, count: 1) }
        #expect(noSection?.code == .outOfRange)
        #expect(reader.dataSection == 0)
        #expect(reader.plaintextSize(ofSection: 0) == size)
    }

    @Test func concurrentReadersAgree() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = SymmetricKey.random()
        let path = directory.file("file")
        _ = try FileConversion.encrypt(Data(Self.plaintext), key: key, to: path, chunkSize: UInt32(Self.chunkSize))
        let reader = try CryptoFileReader(path: path, key: key)
        let plaintext = Self.plaintext
        let mismatches = Mismatches()

        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            var generator = SplitMix64(seed: UInt64(thread))
            for _ in 0..<200 {
                let offset = Int.random(in: 0..<plaintext.count, using: &generator)
                let count = Int.random(in: 1...(3 * Self.chunkSize), using: &generator)
                let bytes = try? reader.read(section: 0, offset: UInt64(offset), count: count)
                if bytes != Array(plaintext[offset..<min(plaintext.count, offset + count)]) { mismatches.record() }
            }
        }
        #expect(mismatches.count == 0)
    }
}

/// A thread-safe counter of failed comparisons in concurrent code.
final class Mismatches: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    func record() {
        lock.withLock { value += 1 }
    }

    var count: Int { lock.withLock { value } }
}
