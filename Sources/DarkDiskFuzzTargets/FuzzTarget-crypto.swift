import DarkDiskCrypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension FuzzTarget {
    /// The key every crypto target uses, so that corpus files made with it (`fixtureKey`) reach past the
    /// header's authentication.
    public static let fixtureKey = try! SymmetricKey(bytes: (0..<32).map { UInt8($0) &* 7 &+ 3 })

    static func header(_ input: [UInt8]) {
        _ = try? CryptoFileHeader(authenticating: input, key: fixtureKey, name: "fuzz input")
    }

    static func reader(_ input: [UInt8]) {
        let fd = FuzzScratch.shared.holding(input)
        guard let reader = try? CryptoFileReader(fileDescriptor: fd, key: fixtureKey, owner: FuzzScratch.shared) else { return }
        for section in 0..<reader.header.sectionSizes.count {
            let size = reader.plaintextSize(ofSection: section)
            var offset: UInt64 = 0
            while offset < size {
                let count = Int(min(size - offset, 64 * 1024))
                guard let bytes = try? reader.read(section: section, offset: offset, count: count) else { break }
                if bytes.count != count { fatalError("reader: \(bytes.count) bytes for \(count) asked inside the section") }
                offset += UInt64(count)
            }
        }
    }

    /// Input: byte 0 picks the chunk size and format, bytes 1–4 the position of the change, byte 5 the XOR
    /// mask (0 becomes 1), the rest is the plaintext. The untouched file must read back exactly; the
    /// changed one must fail at open or at the read that covers the change.
    static func tamper(_ input: [UInt8]) {
        guard input.count >= 6 else { return }
        let chunkSizes: [UInt32] = [4096, 8192, 16384, 65536]
        let chunkSize = chunkSizes[Int(input[0] & 3)]
        let format: CryptoFileFormat = input[0] & 4 == 0 ? .cacheFile : .cloudFile
        let position = Int(UInt32(input[1]) | UInt32(input[2]) << 8 | UInt32(input[3]) << 16 | UInt32(input[4]) << 24)
        let mask = input[5] == 0 ? 1 : input[5]
        let plaintext = Array(input[6...])
        let file = FuzzScratch.shared.encrypted(plaintext, key: fixtureKey, format: format, chunkSize: chunkSize)
        if readAll(file, format: format) != plaintext { fatalError("tamper: an untouched file did not read back") }
        var changed = file
        changed[position % changed.count] ^= mask
        if let read = readAll(changed, format: format) {
            fatalError("tamper: byte \(position % changed.count) of \(changed.count) changed and the file still read (\(read.count) bytes)")
        }
    }

    /// The data section of an encrypted file, or nil if the reader refused it anywhere.
    private static func readAll(_ file: [UInt8], format: CryptoFileFormat) -> [UInt8]? {
        let fd = FuzzScratch.shared.holding(file)
        guard let reader = try? CryptoFileReader(fileDescriptor: fd, key: fixtureKey, owner: FuzzScratch.shared) else { return nil }
        // Every section authenticates, not only the data (a cloud file's metadata and thumbnail are empty).
        var data: [UInt8] = []
        for section in 0..<reader.header.sectionSizes.count {
            let size = Int(reader.plaintextSize(ofSection: section))
            guard let bytes = try? reader.read(section: section, offset: 0, count: size) else { return nil }
            if section == reader.dataSection { data = bytes }
        }
        return data
    }
}
