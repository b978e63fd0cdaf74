import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes a file in either format, streaming: plaintext is appended section by section and the header
/// (whose sizes are not known up front) is written at `finish()` with `pwrite` at offset 0. It holds at
/// most one chunk of plaintext, because a chunk can only be sealed once it is known whether it is its
/// section's last, and up to 256 KiB of sealed chunks, written with one `pwrite` (so nothing of a section
/// is on disk before it fills, the section ends or the file is finished). Not thread-safe: one owner drives
/// it. After any error the writer refuses further calls.
public final class CryptoFileWriter {
    private enum State {
        case writing
        case finished(CryptoFileHeader)
        case failed(CryptoError)
    }

    private let fd: Int32
    private let name: FileName
    private let format: CryptoFileFormat
    private let chunkSize: Int
    private let fileID: [UInt8]
    private let fileKey: [UInt8]
    private let context: GCMContext
    /// The pending chunk's plaintext (`chunkSize` bytes, `pending` of them used).
    private let plaintext: UnsafeMutableRawPointer
    /// Chunk parameters (nonce and AAD) of the chunk being sealed.
    private let output: UnsafeMutableRawPointer
    /// Sealed chunks not written yet: written with one `pwrite` when full, at the end of a section and at
    /// `finish()` (a 4 KiB chunk per `pwrite` spent more time in the system call than in AES-GCM).
    private let batch: UnsafeMutableRawPointer
    private let batchCapacity: Int
    private var batched = 0
    private var pending = 0
    private var section = 0
    private var chunk: UInt64 = 0
    private var sectionSizes: [UInt64]
    private var writeOffset = UInt64(CryptoFormat.headerSize)
    private var state = State.writing

    /// A writer for `fileDescriptor`, a seekable, writable, empty file opened by the caller (the writer uses
    /// `pwrite` at its own offsets from 80 on and neither syncs nor closes it). A fresh file ID is drawn,
    /// so every file gets its own file key even when many share `key`.
    public convenience init(fileDescriptor: Int32, key: SymmetricKey, format: CryptoFileFormat,
                            chunkSize: UInt32 = CryptoFormat.defaultChunkSize) throws(CryptoError) {
        try self.init(fileDescriptor: fileDescriptor, key: key, format: format, chunkSize: chunkSize,
                      name: FileName(descriptor: fileDescriptor))
    }

    /// As the public initializer; `name` identifies the file in error messages.
    init(fileDescriptor: Int32, key: SymmetricKey, format: CryptoFileFormat, chunkSize: UInt32, name: FileName) throws(CryptoError) {
        guard CryptoFormat.isValidChunkSize(chunkSize) else {
            throw CryptoError(.outOfRange, "chunk size \(chunkSize) is not a power of two between \(CryptoFormat.minimumChunkSize) and \(CryptoFormat.maximumChunkSize)")
        }
        let fileID = SecureRandom.bytes(16)
        let fileKey = FileKey.derive(contentKey: key, fileID: fileID)
        context = try GCMContext(key: fileKey, encrypting: true)
        fd = fileDescriptor
        self.name = name
        self.format = format
        self.chunkSize = Int(chunkSize)
        self.fileID = fileID
        self.fileKey = fileKey
        sectionSizes = [UInt64](repeating: 0, count: format.sectionCount)
        plaintext = .allocate(byteCount: Int(chunkSize), alignment: 16)
        output = .allocate(byteCount: Self.sealedOffset, alignment: 16)
        let sealedChunk = Int(chunkSize) + CryptoFormat.tagSize
        batchCapacity = max(1, Self.batchBytes / sealedChunk) * sealedChunk
        batch = .allocate(byteCount: batchCapacity, alignment: 16)
    }

    deinit {
        plaintext.deallocate()
        output.deallocate()
        batch.deallocate()
    }

    /// About how many bytes of sealed chunks go to the file at once.
    private static let batchBytes = 256 * 1024

    /// Bytes `output` holds: the chunk parameters.
    private static let sealedOffset = 64

    /// Appends plaintext to the current section.
    public func append(_ bytes: UnsafeRawBufferPointer) throws(CryptoError) {
        try checkWriting()
        guard section < format.sectionCount else {
            throw CryptoError(.outOfRange, "cannot append to \(name): all \(format.sectionCount) sections are ended")
        }
        do {
            try appendToSection(bytes)
        } catch {
            state = .failed(error)
            throw error
        }
    }

    /// Appends plaintext to the current section.
    public func append(_ data: Data) throws(CryptoError) {
        let result: Result<Void, CryptoError> = data.withUnsafeBytes { bytes in
            Result { () throws(CryptoError) in try append(bytes) }
        }
        try result.get()
    }

    /// Ends the current section and moves to the next (cloud files: metadata, then thumbnail, then data).
    public func endSection() throws(CryptoError) {
        try checkWriting()
        guard section < format.sectionCount else {
            throw CryptoError(.outOfRange, "cannot end a section of \(name): all \(format.sectionCount) sections are ended")
        }
        do {
            try sealPending(last: true)
            try flush()
        } catch {
            state = .failed(error)
            throw error
        }
        section += 1
        chunk = 0
    }

    /// Ends the remaining sections (left empty), seals the last chunk and writes the header at offset 0.
    /// Does not fsync or close the descriptor.
    public func finish() throws(CryptoError) -> CryptoFileHeader {
        while section < format.sectionCount {
            try endSection()
        }
        try checkWriting()
        let header = CryptoFileHeader(version: CryptoFormat.version, format: format, chunkSize: UInt32(chunkSize),
                                      fileID: fileID, sectionSizes: sectionSizes)
        do {
            try writeHeader(header)
        } catch {
            state = .failed(error)
            throw error
        }
        state = .finished(header)
        return header
    }

    /// What a reader of the finished file needs, known without reading it back (nil before `finish()`).
    public var finishedFile: FinishedCryptoFile? {
        if case .finished(let header) = state { return FinishedCryptoFile(header: header, fileKey: fileKey) }
        return nil
    }

    /// Writes the header at offset 0 and cuts off anything beyond the sealed data.
    private func writeHeader(_ header: CryptoFileHeader) throws(CryptoError) {
        let bytes = try header.encoded(fileKey: fileKey)
        let written: Result<Void, CryptoError> = bytes.withUnsafeBytes { bytes in
            Result { () throws(CryptoError) in
                try POSIXIO.pwrite(fd, from: bytes.baseAddress!, count: bytes.count, at: 0, name: name.description)
            }
        }
        try written.get()
        if try POSIXIO.fileSize(fd, name: name.description) > writeOffset {
            try POSIXIO.truncate(fd, to: writeOffset, name: name.description)
        }
    }

    private func checkWriting() throws(CryptoError) {
        switch state {
        case .writing: return
        case .finished: throw CryptoError(.outOfRange, "\(name) is already finished")
        case .failed(let error): throw error
        }
    }

    private func appendToSection(_ bytes: UnsafeRawBufferPointer) throws(CryptoError) {
        guard var next = bytes.baseAddress, !bytes.isEmpty else { return }
        var remaining = bytes.count
        sectionSizes[section] += UInt64(remaining)
        if pending > 0 {
            if pending == chunkSize {
                try sealPending(last: false)
            } else {
                let taken = min(remaining, chunkSize - pending)
                (plaintext + pending).copyMemory(from: next, byteCount: taken)
                pending += taken
                next += taken
                remaining -= taken
                if remaining > 0 { try sealPending(last: false) }
            }
        }
        while remaining > chunkSize {
            try seal(next, count: chunkSize, last: false)
            next += chunkSize
            remaining -= chunkSize
        }
        if remaining > 0 {
            plaintext.copyMemory(from: next, byteCount: remaining)
            pending = remaining
        }
    }

    private func sealPending(last: Bool) throws(CryptoError) {
        guard pending > 0 else { return }
        try seal(plaintext, count: pending, last: last)
        pending = 0
    }

    private func seal(_ source: UnsafeRawPointer, count: Int, last: Bool) throws(CryptoError) {
        let length = count + CryptoFormat.tagSize
        if batched + length > batchCapacity { try flush() }
        ChunkParameters.write(to: output, fileID: fileID, section: section, chunk: chunk, last: last)
        let sealed = batch + batched
        try context.seal(nonce: ChunkParameters.nonce(in: output), aad: ChunkParameters.aad(in: output),
                         plaintext: source, count: count, ciphertext: sealed, tag: sealed + count)
        batched += length
        writeOffset += UInt64(length)
        chunk += 1
    }

    /// Writes the sealed chunks held in the batch where they belong (they end at `writeOffset`).
    private func flush() throws(CryptoError) {
        guard batched > 0 else { return }
        try POSIXIO.pwrite(fd, from: batch, count: batched, at: writeOffset - UInt64(batched), name: name.description)
        batched = 0
    }
}
