import DarkDiskCrypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One in-memory file per process that the crypto targets fill with each input, so a run costs
/// no disk I/O and leaves nothing behind.
final class FuzzScratch: @unchecked Sendable {
    static let shared = FuzzScratch()
    private let fd: Int32
    private let lock = NSLock()

    private init() {
        // An unlinked file in /dev/shm: memory only, gone with the process.
        let path = "/dev/shm/darkdisk-fuzz-\(getpid())-\(UUID().uuidString)"
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        precondition(fd >= 0, "cannot create \(path): errno \(errno)")
        unlink(path)
    }

    /// The scratch file holding exactly `bytes`.
    func holding(_ bytes: [UInt8]) -> Int32 {
        lock.lock()
        defer { lock.unlock() }
        precondition(ftruncate(fd, 0) == 0)
        let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        precondition(written == bytes.count)
        return fd
    }

    /// `plaintext` encrypted (as the data section) in `format`.
    func encrypted(_ plaintext: [UInt8], key: SymmetricKey, format: CryptoFileFormat, chunkSize: UInt32) -> [UInt8] {
        lock.lock()
        defer { lock.unlock() }
        precondition(ftruncate(fd, 0) == 0)
        do {
            let writer = try CryptoFileWriter(fileDescriptor: fd, key: key, format: format, chunkSize: chunkSize)
            for _ in 0..<(format.sectionCount - 1) { try writer.endSection() }
            try writer.append(Data(plaintext))
            _ = try writer.finish()
        } catch {
            fatalError("encrypting \(plaintext.count) bytes failed: \(error)")
        }
        let size = Int(lseek(fd, 0, SEEK_END))
        var bytes = [UInt8](repeating: 0, count: size)
        let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, size, 0) }
        precondition(read == size)
        return bytes
    }
}
