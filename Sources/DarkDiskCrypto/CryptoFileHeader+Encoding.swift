/// Serialization and authentication of the 80-byte header (layout in Docs/FORMAT.md).
extension CryptoFileHeader {
    /// GCM nonce of the header tag; chunk nonces start with a section number (0...2) followed by
    /// three zero bytes, so they never equal it.
    static let tagNonce = [UInt8](repeating: 0xFF, count: GCMContext.nonceSize)
    static let authenticatedSize = 64

    /// The 80 header bytes: fields, then the GCM tag under `fileKey` over bytes 0..<64.
    func encoded(fileKey: [UInt8]) throws(CryptoError) -> [UInt8] {
        var bytes = CryptoFormat.magic
        bytes.append(version)
        bytes.append(format.rawValue)
        bytes += [0, 0]
        bytes += Self.littleEndianBytes(chunkSize)
        bytes += [0, 0, 0, 0]
        bytes += fileID
        for section in 0..<3 {
            bytes += Self.littleEndianBytes(section < sectionSizes.count ? sectionSizes[section] : 0)
        }
        bytes += [UInt8](repeating: 0, count: 8)
        var tag = [UInt8](repeating: 0, count: CryptoFormat.tagSize)
        var empty: [UInt8] = []
        try AESGCM.seal(key: fileKey, nonce: Self.tagNonce, aad: bytes, plaintext: [], ciphertext: &empty, tag: &tag)
        return bytes + tag
    }

    /// Parses and authenticates header bytes read from the start of a file (`bytes` may be shorter than
    /// 80 if the file is), returning the header and the file key derived from `contentKey`.
    /// `name` identifies the file in error messages.
    static func decode(_ bytes: [UInt8], contentKey: SymmetricKey, name: some CustomStringConvertible) throws(CryptoError) -> (CryptoFileHeader, [UInt8]) {
        let magicLength = min(bytes.count, CryptoFormat.magic.count)
        guard bytes.prefix(magicLength).elementsEqual(CryptoFormat.magic.prefix(magicLength)) else {
            throw CryptoError(.badMagic, "\(name) is not a darkdisk encrypted file (bad magic)")
        }
        guard bytes.count >= CryptoFormat.headerSize else {
            throw CryptoError(.truncated, "\(name) is truncated: \(bytes.count) bytes, shorter than the \(CryptoFormat.headerSize)-byte header")
        }
        guard bytes[4] == CryptoFormat.version else {
            throw CryptoError(.unsupportedVersion, "\(name) has format version \(bytes[4]); this darkdisk reads version \(CryptoFormat.version)")
        }
        guard let format = CryptoFileFormat(rawValue: bytes[5]) else {
            throw CryptoError(.malformedHeader, "\(name) has an unknown file format \(bytes[5])")
        }
        guard bytes[6..<8].allSatisfy({ $0 == 0 }), bytes[12..<16].allSatisfy({ $0 == 0 }),
              bytes[56..<64].allSatisfy({ $0 == 0 }) else {
            throw CryptoError(.malformedHeader, "\(name) has nonzero reserved header bytes")
        }
        let chunkSize = UInt32(truncatingIfNeeded: readLittleEndian(bytes, at: 8, count: 4))
        guard CryptoFormat.isValidChunkSize(chunkSize) else {
            throw CryptoError(.malformedHeader, "\(name) has an invalid chunk size \(chunkSize)")
        }
        let allSizes = (0..<3).map { readLittleEndian(bytes, at: 32 + 8 * $0, count: 8) }
        guard allSizes[format.sectionCount...].allSatisfy({ $0 == 0 }) else {
            throw CryptoError(.malformedHeader, "\(name) has nonzero sizes for sections its format does not have")
        }
        let fileID = Array(bytes[16..<32])
        let fileKey = FileKey.derive(contentKey: contentKey, fileID: fileID)
        var empty: [UInt8] = []
        let verified = try AESGCM.open(key: fileKey, nonce: tagNonce, aad: Array(bytes[0..<authenticatedSize]),
                                       ciphertext: [], tag: Array(bytes[authenticatedSize..<CryptoFormat.headerSize]),
                                       plaintext: &empty)
        guard verified else {
            throw CryptoError(.wrongKey, "\(name): wrong key or corrupted header (header tag does not verify)")
        }
        let header = CryptoFileHeader(version: bytes[4], format: format, chunkSize: chunkSize, fileID: fileID,
                                      sectionSizes: Array(allSizes[0..<format.sectionCount]))
        guard header.hasRepresentableLength else {
            throw CryptoError(.malformedHeader, "\(name) has section sizes too large for a file")
        }
        return (header, fileKey)
    }

    /// Whether the file length fits in a signed 64-bit file offset.
    private var hasRepresentableLength: Bool {
        var total = UInt64(CryptoFormat.headerSize)
        let chunkSize = UInt64(chunkSize)
        for size in sectionSizes {
            let chunks = size / chunkSize + (size % chunkSize == 0 ? 0 : 1)
            let (withTags, overflow1) = size.addingReportingOverflow(chunks * UInt64(CryptoFormat.tagSize))
            let (sum, overflow2) = total.addingReportingOverflow(withTags)
            guard !overflow1, !overflow2 else { return false }
            total = sum
        }
        return total <= UInt64(Int64.max)
    }

    private static func littleEndianBytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        (0..<(T.bitWidth / 8)).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
    }

    private static func readLittleEndian(_ bytes: [UInt8], at offset: Int, count: Int) -> UInt64 {
        (0..<count).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << ($1 * 8) }
    }
}
