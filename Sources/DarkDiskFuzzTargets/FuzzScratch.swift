import DarkDiskCrypto
import DarkDiskSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One in-memory file per process that the crypto targets fill with each input, so a run costs
/// no disk I/O and leaves nothing behind.
final class FuzzScratch: @unchecked Sendable {
    static let shared = FuzzScratch()
    private let file: OwnedDescriptor
    private var fd: Int32 { file.rawValue }
    private let lock = NSLock()

    private init() {
        // An unlinked file in /dev/shm: memory only, gone with the process.
        let path = "/dev/shm/darkdisk-fuzz-\(getpid())-\(UUID().uuidString)"
        do { file = try OwnedDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL, mode: 0o600) } catch {
            preconditionFailure("cannot create \(path): \(error)")
        }
        unlink(path)
    }

    /// The scratch file holding exactly `bytes`.
    func holding(_ bytes: [UInt8]) -> Int32 {
        lock.lock()
        defer { lock.unlock() }
        precondition((try? file.truncate(to: 0)) != nil)
        precondition((try? file.pwrite(bytes, at: 0)) != nil)
        return fd
    }

    /// `plaintext` encrypted (as the data section) in `format`.
    func encrypted(_ plaintext: [UInt8], key: SymmetricKey, format: CryptoFileFormat, chunkSize: UInt32) -> [UInt8] {
        lock.lock()
        defer { lock.unlock() }
        precondition((try? file.truncate(to: 0)) != nil)
        do {
            let writer = try CryptoFileWriter(fileDescriptor: fd, key: key, format: format, chunkSize: chunkSize)
            for _ in 0..<(format.sectionCount - 1) { try writer.endSection() }
            try writer.append(Data(plaintext))
            _ = try writer.finish()
        } catch {
            fatalError("encrypting \(plaintext.count) bytes failed: \(error)")
        }
        let size = Int(lseek(fd, 0, SEEK_END))
        guard let bytes = try? file.pread(count: size, at: 0), bytes.count == size else {
            preconditionFailure("cannot read back the \(size) bytes encrypted")
        }
        return bytes
    }
}
