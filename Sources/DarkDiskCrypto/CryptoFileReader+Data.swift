import Foundation

/// `Data` reads for the Foundation-based callers (streams, whole-file conversions), kept apart from the
/// Foundation-free hot path.
extension CryptoFileReader {
    /// Reads plaintext [offset, offset + count) of `section`, clamped at its end, into a new `Data`.
    func readData(section: Int, offset: UInt64, count: Int) throws(CryptoError) -> Data {
        guard section >= 0 && section < header.format.sectionCount else {
            throw CryptoError(.outOfRange, "\(name) has no section \(section)")
        }
        let available = header.sectionSizes[section] > offset ? header.sectionSizes[section] - offset : 0
        var data = Data(count: Int(min(UInt64(count), available)))
        let result: Result<Int, CryptoError> = data.withUnsafeMutableBytes { buffer in
            Result { () throws(CryptoError) in
                try read(section: section, offset: offset, count: buffer.count, into: buffer)
            }
        }
        data.count = try result.get()
        return data
    }
}
