import DarkDiskCrypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Sections of a cloud file fetched by range, without the rest of it: the header and each section's
/// ciphertext are laid out at their offsets in a sparse, already-unlinked scratch file, which the
/// random-access reader then authenticates exactly like a whole file (header tag, length, every chunk).
struct RangedCloudFile {
    let header: CryptoFileHeader
    private let reader: CryptoFileReader

    /// `headerBytes` are the file's first bytes; `sections` maps a section to its ciphertext.
    init(headerBytes: [UInt8], sections: [Int: Data], key: SymmetricKey, scratchFolder: String, name: String) throws {
        header = try CryptoFileHeader(authenticating: headerBytes, key: key, name: name)
        let path = scratchFolder + "/" + UUID().uuidString + ".meta"
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw RemoteError(.io, "cannot create \(path): \(String(cString: strerror(errno)))") }
        unlink(path)
        do {
            guard ftruncate(fd, off_t(header.fileLength)) == 0 else {
                throw RemoteError(.io, "cannot size a scratch file: \(String(cString: strerror(errno)))")
            }
            try Self.write(Data(headerBytes), to: fd, at: 0)
            for (section, ciphertext) in sections {
                guard UInt64(ciphertext.count) == header.ciphertextLength(ofSection: section) else {
                    throw RemoteError(.invalidResponse, "\(name): section \(section) has \(ciphertext.count) bytes, its header says \(header.ciphertextLength(ofSection: section))")
                }
                try Self.write(ciphertext, to: fd, at: header.sectionOffset(section))
            }
            reader = try CryptoFileReader(takingOwnershipOf: fd, key: key)
        } catch {
            close(fd)
            throw error
        }
    }

    /// The plaintext of a section given to the initializer, authenticated chunk by chunk.
    func plaintext(_ section: CloudFileSection) throws(CryptoError) -> Data {
        Data(try reader.read(section: section.rawValue, offset: 0, count: Int(header.sectionSizes[section.rawValue])))
    }

    private static func write(_ data: Data, to fd: Int32, at offset: UInt64) throws(RemoteError) {
        let written = data.withUnsafeBytes { buffer in pwrite(fd, buffer.baseAddress, buffer.count, off_t(offset)) }
        guard written == data.count else {
            throw RemoteError(.io, "cannot write a scratch file: \(String(cString: strerror(errno)))")
        }
    }
}
