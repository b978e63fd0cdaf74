import DarkDiskCrypto
import DarkDiskSystem
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
        let file: OwnedDescriptor
        do { file = try OwnedDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600) } catch {
            throw RemoteError(.io, "cannot create \(path): \(error)")
        }
        unlink(path)
        do { try file.truncate(to: header.fileLength) } catch {
            throw RemoteError(.io, "cannot size a scratch file: \(error)")
        }
        try Self.write(Data(headerBytes), to: file, at: 0)
        for (section, ciphertext) in sections {
            guard UInt64(ciphertext.count) == header.ciphertextLength(ofSection: section) else {
                throw RemoteError(.invalidResponse, "\(name): section \(section) has \(ciphertext.count) bytes, its header says \(header.ciphertextLength(ofSection: section))")
            }
            try Self.write(ciphertext, to: file, at: header.sectionOffset(section))
        }
        // (The reader keeps the file open; a failure above closes it, as the owner goes.)
        reader = try CryptoFileReader(fileDescriptor: file.rawValue, key: key, owner: file)
    }

    /// The plaintext of a section given to the initializer, authenticated chunk by chunk.
    func plaintext(_ section: CloudFileSection) throws(CryptoError) -> Data {
        Data(try reader.read(section: section.rawValue, offset: 0, count: Int(header.sectionSizes[section.rawValue])))
    }

    private static func write(_ data: Data, to file: OwnedDescriptor, at offset: UInt64) throws(RemoteError) {
        let failure = data.withUnsafeBytes { buffer -> Errno? in
            guard let base = buffer.baseAddress else { return nil }
            do throws(Errno) { try file.pwrite(from: base, count: buffer.count, at: offset) } catch { return error }
            return nil
        }
        if let failure { throw RemoteError(.io, "cannot write a scratch file: \(failure)") }
    }
}
