import DarkDiskSystem
#if canImport(Glibc)
import Glibc
#endif

/// Random-access reader of an encrypted file in either format. Opening reads and authenticates the header
/// with one `pread` and checks the file length with `fstat`; each read then decrypts and verifies only the
/// chunks it covers. Immutable after opening, so any number of threads may read concurrently.
public final class CryptoFileReader: Sendable {
    /// Bytes before the ciphertext in a read's scratch buffer, holding the chunk parameters.
    private static let scratchPrefix = 64

    /// The authenticated header.
    public let header: CryptoFileHeader
    private let fd: Int32
    /// Who keeps `fd` open: its `OwnedDescriptor` when the reader owns it, else an object of the caller's
    /// (a retain token, a shared descriptor). The reader keeps it alive, so the descriptor cannot close, and
    /// its number go to another file, while the reader lives.
    private let owner: any AnyObject & Sendable
    private let fileID: [UInt8]
    private let fileKey: [UInt8]
    let name: FileName

    /// Reads the file open at `fileDescriptor` (readable with `pread`), which `owner` keeps open (a retain
    /// token, a shared descriptor): the reader keeps `owner` alive for as long as the reader lives.
    public convenience init(fileDescriptor: Int32, key: SymmetricKey, owner: any AnyObject & Sendable) throws(CryptoError) {
        let name = FileName(descriptor: fileDescriptor)
        let (header, fileKey) = try Self.authenticate(fileDescriptor, key: key, name: name)
        self.init(fileDescriptor: fileDescriptor, header: header, fileKey: fileKey, owner: owner, name: name)
    }

    /// Reads `file`, which this process finished writing, open at `fileDescriptor` (which `owner` keeps
    /// open): nothing is read back or authenticated again (a drive commit opened each new version twice,
    /// for a header it had just written).
    public convenience init(finished file: FinishedCryptoFile, fileDescriptor: Int32, owner: any AnyObject & Sendable) {
        self.init(fileDescriptor: fileDescriptor, header: file.header, fileKey: file.fileKey, owner: owner, name: FileName(descriptor: fileDescriptor))
    }

    /// Reads the file open at `fileDescriptor` and owns the descriptor: the reader closes it when released
    /// (if opening throws, the descriptor is left open, still the caller's).
    public convenience init(takingOwnershipOf fileDescriptor: Int32, key: SymmetricKey) throws(CryptoError) {
        let name = FileName(descriptor: fileDescriptor)
        let (header, fileKey) = try Self.authenticate(fileDescriptor, key: key, name: name)
        self.init(fileDescriptor: fileDescriptor, header: header, fileKey: fileKey, owner: OwnedDescriptor(owning: fileDescriptor), name: name)
    }

    /// Opens `path` read-only; the reader closes it when released.
    public convenience init(path: String, key: SymmetricKey) throws(CryptoError) {
        let file = try POSIXIO.openForReading(path)
        let (header, fileKey) = try Self.authenticate(file.rawValue, key: key, name: FileName(path: path))
        self.init(fileDescriptor: file.rawValue, header: header, fileKey: fileKey, owner: file, name: FileName(path: path))
    }

    private init(fileDescriptor: Int32, header: CryptoFileHeader, fileKey: [UInt8], owner: any AnyObject & Sendable, name: FileName) {
        fd = fileDescriptor
        self.header = header
        self.fileID = header.fileID
        self.fileKey = fileKey
        self.owner = owner
        self.name = name
    }

    /// Reads, parses and authenticates the header and checks that the file has exactly the length it implies.
    private static func authenticate(_ fd: Int32, key: SymmetricKey, name: FileName) throws(CryptoError) -> (CryptoFileHeader, [UInt8]) {
        var bytes = [UInt8](repeating: 0, count: CryptoFormat.headerSize)
        let readResult: Result<Int, CryptoError> = bytes.withUnsafeMutableBytes { buffer in
            Result { () throws(CryptoError) in
                try POSIXIO.pread(fd, into: buffer.baseAddress!, count: buffer.count, at: 0, name: name.description)
            }
        }
        let count = try readResult.get()
        let (header, fileKey) = try CryptoFileHeader.decode(Array(bytes[0..<count]), contentKey: key, name: name)
        let actual = try POSIXIO.fileSize(fd, name: name.description)
        let expected = header.fileLength
        if actual < expected {
            throw CryptoError(.truncated, "\(name) is truncated: \(actual) bytes, the header says \(expected)")
        }
        if actual > expected {
            throw CryptoError(.extended, "\(name) is longer than its header says: \(actual) bytes, expected \(expected)")
        }
        return (header, fileKey)
    }

    /// The section holding the content: 0 for cache files, 2 for cloud files.
    public var dataSection: Int { header.format.dataSection }

    /// Copies the encrypted file as it is (its header and every chunk: `header.fileLength` bytes) to `path`,
    /// created or emptied, without decrypting it: how an upload sends a file already in the cloud format.
    /// The bytes are the file's own, so its readers authenticate them as they would here.
    public func copyEncrypted(to path: String) throws(CryptoError) {
        let output = try POSIXIO.createFile(path)  // (a failure closes it, as its owner goes)
        let blockSize = 1 << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: blockSize, alignment: 16)
        defer { buffer.deallocate() }
        let length = header.fileLength
        var offset: UInt64 = 0
        while offset < length {
            let wanted = Int(min(UInt64(blockSize), length - offset))
            let count = try POSIXIO.pread(fd, into: buffer, count: wanted, at: offset, name: name.description)
            guard count == wanted else {
                throw CryptoError(.truncated, "\(name) ends at \(offset + UInt64(count)) of the \(length) bytes its header describes")
            }
            try POSIXIO.pwrite(output.rawValue, from: buffer, count: count, at: offset, name: path)
            offset += UInt64(count)
        }
        try POSIXIO.closeWritten(output, name: path)
    }

    /// Plaintext size of `section`.
    public func plaintextSize(ofSection section: Int) -> UInt64 {
        header.sectionSizes[section]
    }

    /// Reads plaintext [offset, offset + count) of `section`, clamped at the section's end, into `buffer`
    /// (which must hold `count` bytes) and returns the number of bytes written. Reading at the end returns
    /// 0; an offset past the end is `.outOfRange`. Issues one `pread` for the covering chunks' ciphertext,
    /// then verifies and decrypts each chunk; on a failed chunk the buffer is zeroed and the error names
    /// the section and chunk. This is the FUSE hot path: its only allocations are one scratch buffer and
    /// one cipher context.
    public func read(section: Int, offset: UInt64, count: Int, into buffer: UnsafeMutableRawBufferPointer) throws(CryptoError) -> Int {
        precondition(count >= 0 && count <= buffer.count, "count \(count) does not fit the buffer of \(buffer.count) bytes")
        guard section >= 0 && section < header.format.sectionCount else {
            throw CryptoError(.outOfRange, "\(name) has no section \(section)")
        }
        let size = header.sectionSizes[section]
        guard offset <= size else {
            throw CryptoError(.outOfRange, "offset \(offset) is past the end (\(size)) of section \(section) of \(name)", section: section)
        }
        let length = Int(min(UInt64(count), size - offset))
        guard length > 0, let destination = buffer.baseAddress else { return 0 }

        let chunkSize = UInt64(header.chunkSize)
        let stride = chunkSize + UInt64(CryptoFormat.tagSize)
        let end = offset + UInt64(length)
        let firstChunk = offset / chunkSize
        let lastChunk = (end - 1) / chunkSize
        let lastChunkOfSection = header.chunkCount(ofSection: section) - 1
        let covering = header.ciphertextRange(section: section, offset: offset, count: length)
        let readStart = covering.lowerBound
        let readLength = covering.count

        let scratch = UnsafeMutableRawPointer.allocate(byteCount: Self.scratchPrefix + readLength, alignment: 16)
        defer { scratch.deallocate() }
        let ciphertext = scratch + Self.scratchPrefix
        let got = try POSIXIO.pread(fd, into: ciphertext, count: readLength, at: readStart, name: name.description)
        guard got == readLength else {
            throw CryptoError(.truncated, "\(name) was truncated after it was opened", section: section, chunk: firstChunk)
        }
        let context = try GCMContext(key: fileKey, encrypting: false)
        for chunk in firstChunk...lastChunk {
            let chunkStart = chunk * chunkSize
            let chunkLength = header.plaintextLength(ofChunk: chunk, section: section)
            let sealed = ciphertext + Int((chunk - firstChunk) * stride)
            let wantedStart = Int(max(offset, chunkStart) - chunkStart)
            let wantedEnd = Int(min(end, chunkStart + UInt64(chunkLength)) - chunkStart)
            let target = destination + Int(chunkStart + UInt64(wantedStart) - offset)
            let whole = wantedStart == 0 && wantedEnd == chunkLength
            ChunkParameters.write(to: scratch, fileID: fileID, section: section, chunk: chunk, last: chunk == lastChunkOfSection)
            let verified = try context.open(nonce: ChunkParameters.nonce(in: scratch), aad: ChunkParameters.aad(in: scratch),
                                            ciphertext: sealed, count: chunkLength, tag: sealed + chunkLength,
                                            plaintext: whole ? target : sealed)
            guard verified else {
                destination.initializeMemory(as: UInt8.self, repeating: 0, count: length)
                throw CryptoError(.chunkAuthenticationFailed,
                                  "\(name): chunk \(chunk) of section \(section) failed authentication (tampered or corrupted)",
                                  section: section, chunk: chunk)
            }
            if !whole {
                target.copyMemory(from: sealed + wantedStart, byteCount: wantedEnd - wantedStart)
            }
        }
        return length
    }

    /// Reads plaintext [offset, offset + count) of `section`, clamped at its end, into a new array.
    public func read(section: Int, offset: UInt64, count: Int) throws(CryptoError) -> [UInt8] {
        precondition(count >= 0, "negative count \(count)")
        guard section >= 0 && section < header.format.sectionCount else {
            throw CryptoError(.outOfRange, "\(name) has no section \(section)")
        }
        let available = header.sectionSizes[section] > offset ? header.sectionSizes[section] - offset : 0
        let capacity = Int(min(UInt64(count), available))
        var failure: CryptoError?
        let bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            do throws(CryptoError) {
                initialized = try read(section: section, offset: offset, count: capacity, into: UnsafeMutableRawBufferPointer(buffer))
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        return bytes
    }

    /// Reads every section to its end, 1 MiB at a time, so that every chunk's tag is checked (`check --full`,
    /// `check --remote`). Costs one pass over the file; the first bad chunk throws, naming it.
    public func authenticateAll() throws(CryptoError) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        for section in 0..<header.sectionSizes.count {
            var offset: UInt64 = 0
            let size = plaintextSize(ofSection: section)
            while offset < size {
                let count = Int(min(size - offset, UInt64(buffer.count)))
                _ = try read(section: section, offset: offset, count: count, into: buffer)
                offset += UInt64(count)
            }
        }
    }
}
