import DarkDiskCrypto
import Foundation
import Synchronization

/// The content of a drive file open for writing (DESIGN §10): the file's committed version (its stored
/// data, held by its export) under an encrypted staging file that holds each chunk written since. A read
/// takes each chunk from the staging file if written there, else from the committed version, else zeros;
/// a write re-seals only the chunks it touches. `DiskManager.commitDriveFile` turns it into the file's
/// next version, which then becomes the committed one.
///
/// One lock serializes the file's reads, writes, truncations and its commit (gocryptfs's per-file content
/// lock): a write can never slip between a commit's copy and its switch to the new version. Nothing else
/// is locked while it is held but the index (by a commit).
public final class StagedContent: Sendable {
    struct State {
        /// The plaintext size now.
        var size: UInt64
        /// The committed version and its reader (nil: none, e.g. a new or truncated file).
        var base: (export: DiskExport, reader: CryptoFileReader)?
        /// Bytes of the committed version that still show: a truncation hides the rest for good.
        var baseLimit: UInt64
        /// Whether the content differs from the committed version.
        var dirty = false
        /// When the content last changed, if after the last time set explicitly (`setModified`).
        var lastChange: (seconds: Int64, nanoseconds: UInt32)?
    }

    let staging: StagingCryptoFile
    let state: Mutex<State>

    /// Content that starts as `base` (the file's stored data; nil: empty). `isNew`: no version is committed
    /// yet, so the first commit is due even without a write (a file made by `touch`).
    public init(base: DiskExport?, stagingDirectory: String, isNew: Bool = false) throws(DarkDiskError) {
        do {
            staging = try StagingCryptoFile(directory: stagingDirectory)
        } catch {
            throw DarkDiskError(crypto: error)
        }
        let reader: CryptoFileReader?
        do { reader = try base?.reader() } catch { throw DarkDiskError(crypto: error) }
        let size = base?.plaintextSize ?? 0
        state = Mutex(State(size: size, base: base.map { ($0, reader!) }, baseLimit: size, dirty: isNew))
    }

    /// The plaintext size now.
    public var size: UInt64 { state.withLock { $0.size } }

    /// Whether there are changes that no commit has taken yet.
    public var isDirty: Bool { state.withLock { $0.dirty } }

    /// When the content last changed (nil: not since it was committed, or its time was set since).
    public var lastChange: (seconds: Int64, nanoseconds: UInt32)? { state.withLock { $0.lastChange } }

    /// The modification time was set explicitly (`touch -d`, `cp -p`): later commits keep it unless the
    /// content changes again.
    public func setModified() {
        state.withLock { $0.lastChange = nil }
    }

    /// Copies plaintext [offset, offset + count) into `buffer`; returns the bytes copied (fewer at the end).
    public func read(offset: UInt64, count: Int, into buffer: UnsafeMutableRawPointer) throws(DarkDiskError) -> Int {
        let chunkSize = UInt64(staging.chunkSize)
        return try state.withLock { (state) throws(DarkDiskError) -> Int in
            guard offset < state.size, count > 0 else { return 0 }
            let end = min(state.size, offset + UInt64(count))
            let scratch = UnsafeMutableRawPointer.allocate(byteCount: Int(chunkSize), alignment: 16)
            defer { scratch.deallocate() }
            var position = offset
            while position < end {
                let chunk = position / chunkSize
                try fill(chunk, into: scratch, state)
                let within = Int(position % chunkSize)
                let taken = Int(min(end - position, chunkSize - UInt64(within)))
                (buffer + Int(position - offset)).copyMemory(from: scratch + within, byteCount: taken)
                position += UInt64(taken)
            }
            return Int(end - offset)
        }
    }

    /// Writes `bytes` at `offset` (past the end: the gap reads as zeros).
    public func write(offset: UInt64, bytes: UnsafeRawBufferPointer) throws(DarkDiskError) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        let chunkSize = UInt64(staging.chunkSize)
        let now = Self.now()
        try state.withLock { (state) throws(DarkDiskError) in
            let end = offset + UInt64(bytes.count)
            let scratch = UnsafeMutableRawPointer.allocate(byteCount: Int(chunkSize), alignment: 16)
            defer { scratch.deallocate() }
            var position = offset
            while position < end {
                let chunk = position / chunkSize
                let within = Int(position % chunkSize)
                let taken = Int(min(end - position, chunkSize - UInt64(within)))
                if taken < Int(chunkSize) { try fill(chunk, into: scratch, state) }
                scratch.advanced(by: within).copyMemory(from: base + Int(position - offset), byteCount: taken)
                do throws(CryptoError) { try staging.write(chunk: chunk, from: scratch) } catch { throw DarkDiskError(crypto: error) }
                position += UInt64(taken)
            }
            state.size = max(state.size, end)
            state.dirty = true
            state.lastChange = now
        }
    }

    /// Sets the size: a shorter file loses its end for good, a longer one reads zeros past the old end.
    public func truncate(to size: UInt64) throws(DarkDiskError) {
        let chunkSize = UInt64(staging.chunkSize)
        let now = Self.now()
        try state.withLock { (state) throws(DarkDiskError) in
            if size < state.size {
                let chunk = size / chunkSize
                let within = Int(size % chunkSize)
                if within > 0 {
                    // The chunk the new end falls in keeps zeros past it, so a later extension reads zeros.
                    let scratch = UnsafeMutableRawPointer.allocate(byteCount: Int(chunkSize), alignment: 16)
                    defer { scratch.deallocate() }
                    try fill(chunk, into: scratch, state)
                    (scratch + within).initializeMemory(as: UInt8.self, repeating: 0, count: Int(chunkSize) - within)
                    do throws(CryptoError) {
                        try staging.write(chunk: chunk, from: scratch)
                        try staging.removeChunks(from: chunk + 1)
                    } catch {
                        throw DarkDiskError(crypto: error)
                    }
                } else {
                    do throws(CryptoError) { try staging.removeChunks(from: chunk) } catch { throw DarkDiskError(crypto: error) }
                }
                state.baseLimit = min(state.baseLimit, size)
            }
            guard size != state.size else { return }
            state.size = size
            state.dirty = true
            state.lastChange = now
        }
    }

    /// Runs `store` with the content's plaintext, chunk by chunk in order (each call gets a chunk's bytes,
    /// the last one short), and the time of its last change, holding off every other read and write; when
    /// it returns the new version, that becomes the committed one and the staging file is emptied.
    func commit(_ store: (_ chunks: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void,
                          _ lastChange: (seconds: Int64, nanoseconds: UInt32)?) throws(DarkDiskError) -> DiskExport) throws(DarkDiskError) -> DiskExport {
        let chunkSize = UInt64(staging.chunkSize)
        return try state.withLock { (state) throws(DarkDiskError) -> DiskExport in
            let size = state.size
            let snapshot = state
            let export = try store({ body in
                let scratch = UnsafeMutableRawPointer.allocate(byteCount: Int(chunkSize), alignment: 16)
                defer { scratch.deallocate() }
                var position: UInt64 = 0
                while position < size {
                    try fill(position / chunkSize, into: scratch, snapshot)
                    let count = Int(min(chunkSize, size - position))
                    try body(UnsafeRawBufferPointer(start: scratch, count: count))
                    position += UInt64(count)
                }
            }, snapshot.lastChange)
            let reader: CryptoFileReader
            do throws(CryptoError) {
                reader = try export.reader()
                try staging.removeChunks(from: 0)
            } catch {
                throw DarkDiskError(crypto: error)
            }
            state.base = (export, reader)
            state.baseLimit = export.plaintextSize
            state.dirty = false
            state.lastChange = nil
            return export
        }
    }

    /// Chunk `chunk`'s plaintext as the content holds it now, zero-padded to a whole chunk.
    private func fill(_ chunk: UInt64, into scratch: UnsafeMutableRawPointer, _ state: borrowing State) throws(DarkDiskError) {
        let chunkSize = staging.chunkSize
        do {
            if try staging.read(chunk: chunk, into: scratch) { return }
        } catch {
            throw DarkDiskError(crypto: error)
        }
        scratch.initializeMemory(as: UInt8.self, repeating: 0, count: chunkSize)
        let start = chunk * UInt64(chunkSize)
        guard let base = state.base, start < state.baseLimit else { return }
        let count = Int(min(UInt64(chunkSize), state.baseLimit - start))
        do {
            _ = try base.reader.read(section: base.reader.dataSection, offset: start, count: count,
                                     into: UnsafeMutableRawBufferPointer(start: scratch, count: count))
        } catch {
            throw DarkDiskError(crypto: error)
        }
    }

    private static func now() -> (seconds: Int64, nanoseconds: UInt32) {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return (Int64(time.tv_sec), UInt32(time.tv_nsec))
    }
}

extension DiskManager {
    /// Staged content for writing a drive file, starting as `base` (nil: empty); its staging file is on the
    /// store's disk. `isNew`: a change to commit even if nothing is written (see `StagedContent`).
    public func stagedContent(base: DiskExport?, isNew: Bool = false) throws(DarkDiskError) -> StagedContent {
        try FileOperations.makeDirectory(location.persistentStaging)
        return try StagedContent(base: base, stagingDirectory: location.persistentStaging, isNew: isNew)
    }
}
