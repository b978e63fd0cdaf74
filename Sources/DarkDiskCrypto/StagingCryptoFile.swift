import DarkDiskSync
import DarkDiskSystem
#if canImport(Glibc)
import Glibc
#endif

/// An encrypted scratch file that can be rewritten in place, chunk by chunk: where the drive keeps a file
/// open for writing, so that no plaintext ever reaches the disk. Each chunk is sealed with
/// AES-256-GCM under a fresh random nonce every time it is written (gocryptfs's block layout): rewriting a
/// chunk never reuses a nonce, which the store format's position-derived nonces could not allow.
///
/// Layout: chunk `k` takes the slot at `k × (12 + chunkSize + 16)`: its nonce, the ciphertext of a whole
/// chunk (a short one is zero-padded), the tag; the AAD is the file's random ID and `k` (UInt64 LE). The
/// key is random and lives only in memory, and the file has no name (`O_TMPFILE`): a process that dies
/// leaves nothing readable, and nothing to sweep. Which chunks hold data is kept in memory; a chunk never
/// written reads as absent. Thread-safe: every call holds the file's lock for its one `pread` or `pwrite`.
public final class StagingCryptoFile: Sendable {
    /// Plaintext bytes per chunk.
    public let chunkSize: Int
    private let file: OwnedDescriptor
    var fd: Int32 { file.rawValue }
    let key: [UInt8]
    let fileID: [UInt8]
    private let name: String
    /// The chunks written since the file was made or last cleared.
    private let present = Locked<Set<UInt64>>([])

    static let nonceSize = GCMContext.nonceSize
    static let aadSize = 16 + 8
    /// Linux's `O_TMPFILE` (a macro Swift does not import): `__O_TMPFILE | O_DIRECTORY`.
    static let tmpfile: Int32 = 0o20000000 | O_DIRECTORY

    /// Bytes one chunk's slot takes.
    var stride: Int { Self.nonceSize + chunkSize + CryptoFormat.tagSize }

    /// A new, empty staging file in `directory` (on the disk the store is on, so that it counts where the
    /// store's files count).
    public init(directory: String, chunkSize: Int = 64 * 1024) throws(CryptoError) {
        precondition(chunkSize >= 4096 && chunkSize & (chunkSize - 1) == 0, "chunk size must be a power of two of at least 4096")
        if let unnamed = try? OwnedDescriptor.open(directory, Self.tmpfile | O_RDWR, mode: 0o600) {
            file = unnamed
        } else {
            // A file system without O_TMPFILE: a named file, unlinked at once.
            let path = directory + "/.staging-" + Hex.encode(SecureRandom.bytes(8))
            do { file = try OwnedDescriptor.open(path, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW, mode: 0o600) } catch {
                throw .posix("cannot create a staging file in \(directory)", errno: error.rawValue)
            }
            unlink(path)
        }
        self.chunkSize = chunkSize
        key = SecureRandom.bytes(32)
        fileID = SecureRandom.bytes(16)
        name = "a staging file in \(directory)"
    }

    /// Whether chunk `chunk` holds data written to this file.
    public func contains(_ chunk: UInt64) -> Bool {
        present.withLock { $0.contains(chunk) }
    }

    /// Whether any chunk holds data written to this file.
    public var holdsChunks: Bool {
        present.withLock { !$0.isEmpty }
    }

    /// Seals `chunkSize` bytes at `plaintext` as chunk `chunk` (one `pwrite`), replacing what it held.
    public func write(chunk: UInt64, from plaintext: UnsafeRawPointer) throws(CryptoError) {
        let slot = UnsafeMutableRawPointer.allocate(byteCount: stride + Self.aadSize, alignment: 16)
        defer { slot.deallocate() }
        let nonce = SecureRandom.bytes(Self.nonceSize)
        nonce.withUnsafeBytes { slot.copyMemory(from: $0.baseAddress!, byteCount: Self.nonceSize) }
        let aad = writeAAD(chunk: chunk, at: slot + stride)
        let context = try GCMContext(key: key, encrypting: true)
        try context.seal(nonce: slot, aad: aad, plaintext: plaintext, count: chunkSize,
                         ciphertext: slot + Self.nonceSize, tag: slot + Self.nonceSize + chunkSize)
        try POSIXIO.pwrite(fd, from: slot, count: stride, at: UInt64(stride) * chunk, name: name)
        present.withLock { _ = $0.insert(chunk) }
    }

    /// Decrypts chunk `chunk` into `plaintext` (`chunkSize` bytes) with one `pread`; false when the chunk
    /// holds nothing written. A chunk that fails its tag (the disk returned other bytes) is an error naming it.
    public func read(chunk: UInt64, into plaintext: UnsafeMutableRawPointer) throws(CryptoError) -> Bool {
        guard contains(chunk) else { return false }
        let slot = UnsafeMutableRawPointer.allocate(byteCount: stride + Self.aadSize, alignment: 16)
        defer { slot.deallocate() }
        let got = try POSIXIO.pread(fd, into: slot, count: stride, at: UInt64(stride) * chunk, name: name)
        guard got == stride else {
            throw CryptoError(.truncated, "\(name) ends inside chunk \(chunk)", section: 0, chunk: chunk)
        }
        let aad = writeAAD(chunk: chunk, at: slot + stride)
        let context = try GCMContext(key: key, encrypting: false)
        let verified = try context.open(nonce: slot, aad: aad, ciphertext: slot + Self.nonceSize, count: chunkSize,
                                        tag: slot + Self.nonceSize + chunkSize, plaintext: plaintext)
        guard verified else {
            throw CryptoError(.chunkAuthenticationFailed, "chunk \(chunk) of \(name) failed authentication", section: 0, chunk: chunk)
        }
        return true
    }

    /// Forgets chunks `first` and later and gives their room back to the disk.
    public func removeChunks(from first: UInt64) throws(CryptoError) {
        present.withLock { $0 = $0.filter { $0 < first } }
        try POSIXIO.truncate(fd, to: UInt64(stride) * first, name: name)
    }

    /// The bytes the file takes on disk.
    public var allocatedSize: UInt64 {
        guard let status = try? file.stat() else { return 0 }
        return UInt64(status.st_blocks) * 512
    }

    /// Writes the AAD of chunk `chunk` (file ID, then `chunk` as UInt64 LE) at `destination`.
    private func writeAAD(chunk: UInt64, at destination: UnsafeMutableRawPointer) -> UnsafeRawBufferPointer {
        fileID.withUnsafeBytes { destination.copyMemory(from: $0.baseAddress!, byteCount: 16) }
        destination.storeBytes(of: chunk.littleEndian, toByteOffset: 16, as: UInt64.self)
        return UnsafeRawBufferPointer(start: destination, count: Self.aadSize)
    }
}
