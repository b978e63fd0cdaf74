import DarkDiskCrypto
import DarkDiskSync
import Foundation

/// The content of a drive file open for writing: the file's committed version (its stored
/// data, read through its export's reader) under an encrypted staging file that holds each chunk written
/// since. A read takes each chunk from the staging file if written there, else from the committed version,
/// else zeros; a write re-seals only the chunks it touches. `DiskManager.commitDriveFile` turns it into the
/// file's next version, which then becomes the committed one.
///
/// A file written from its start to its end in order (`cp`, `tar x`, `dd`, an editor's save) never meets
/// the staging file: its bytes are sealed straight into the next version, a new store file under the node's
/// key, so a commit only names that file (one AES pass and one write of each byte, as gocryptfs makes). The
/// first write elsewhere, read or truncation sets that version aside as the one reads fall through to, and
/// staging goes on over it. A write that fails part-way through a sequential version leaves the content
/// failed: every later call throws, and the node keeps the version it had.
///
/// One lock serializes the file's reads, writes, truncations and its commit (gocryptfs's per-file content
/// lock): a write can never slip between a commit's copy and its switch to the new version. Nothing else
/// is locked while it is held but the index (by a commit).
package final class StagedContent: Sendable {
    /// A version being written from its start to its end in order. (Its writer is not thread-safe: it is
    /// only ever used under the content's lock.)
    struct SequentialVersion: @unchecked Sendable {
        let file: UnnamedFile
        let writer: CryptoFileWriter
    }

    struct State: Sendable {
        /// The plaintext size now.
        var size: UInt64
        /// The version reads fall through to: the committed one (its reader keeps its export alive), or a
        /// sequential version set aside (nil: none, e.g. a new file).
        var base: CryptoFileReader?
        /// Bytes of the base that still show: a truncation hides the rest for good.
        var baseLimit: UInt64
        /// Chunks written over the base, made at the first such write.
        var staging: StagingCryptoFile?
        /// The next version, while the file has been written from its start to its end in order.
        var sequential: SequentialVersion?
        /// The sequential version once set aside as the base: a commit that finds nothing written over it
        /// stores it as it is.
        var setAside: (file: UnnamedFile, finished: FinishedCryptoFile)?
        /// Why the content cannot be used any more (a sequential version's write failed part-way).
        var failure: DarkDiskError?
        /// Whether the content differs from the committed version.
        var dirty = false
        /// When the content last changed, if after the last time set explicitly (`setModified`).
        var lastChange: (seconds: Int64, nanoseconds: UInt32)?
        /// Permission bits and a modification time set while changes were waiting for their commit, which
        /// writes them with the content (`deferAttributes`).
        var mode: UInt32?
        var modified: (seconds: Int64, nanoseconds: UInt32)?
        /// When the content or those attributes last changed since the last commit (the node's change time
        /// until the commit writes its own).
        var changed: (seconds: Int64, nanoseconds: UInt32)?
    }

    /// What a commit writes into the node's attributes besides the content: its permission bits, if set
    /// since the last commit, and its modification time (the last change, or the time set after it).
    package struct AttributeChanges: Sendable {
        package var mode: UInt32?
        package var modified: (seconds: Int64, nanoseconds: UInt32)?
        /// When the content or the attributes last changed since the last commit, if they did.
        package var changed: (seconds: Int64, nanoseconds: UInt32)?
    }

    /// Plaintext bytes per chunk of the staging file (the versions sealed here take the store's own chunk
    /// size, `CryptoFormat.defaultChunkSize`, as every new file does: Docs/FORMAT.md).
    static let chunkSize = 64 * 1024
    let directory: String
    let key: SymmetricKey
    /// Makes the unnamed file a new version is sealed into.
    let newVersionFile: @Sendable () throws(DarkDiskError) -> UnnamedFile
    let state: Locked<State>

    /// Content that starts as `base` (the file's stored data; nil: empty), with its staging file in
    /// `directory` (the store's persistent staging folder) and its new versions sealed under `key` (the
    /// node's content key) into the files `newVersionFile` makes. `isNew`: no version is committed yet, so
    /// the first commit is due even without a write (a file made by `touch`).
    init(base: DiskExport?, key: SymmetricKey, directory: String, isNew: Bool = false,
         newVersionFile: @escaping @Sendable () throws(DarkDiskError) -> UnnamedFile) throws(DarkDiskError) {
        let reader: CryptoFileReader?
        do { reader = try base?.reader() } catch { throw DarkDiskError(crypto: error) }
        let size = base?.plaintextSize ?? 0
        self.directory = directory
        self.key = key
        self.newVersionFile = newVersionFile
        state = Locked(State(size: size, base: reader, baseLimit: size, dirty: isNew))
    }

    /// The plaintext size now.
    package var size: UInt64 { state.withLock { $0.size } }

    /// Whether there are changes that no commit has taken yet.
    package var isDirty: Bool { state.withLock { $0.dirty } }

    /// The attributes the next commit writes (nothing: none since the last commit).
    package var pendingAttributes: AttributeChanges { state.withLock { Self.attributeChanges($0) } }

    /// The modification time was set explicitly (`touch -d`, `cp -p`): later commits keep it unless the
    /// content changes again.
    package func setModified() {
        let now = Self.now()
        state.withLock {
            $0.lastChange = nil
            $0.modified = nil
            $0.changed = now
        }
    }

    /// Keeps a change of permission bits or modification time for the commit that is due, so that it is
    /// written with the content in one transaction (`tar x` and `cp -p` set both between the writes and the
    /// `close`); false, keeping nothing, when no commit is due (the caller writes them itself).
    package func deferAttributes(mode: UInt32?, modified: (seconds: Int64, nanoseconds: UInt32)?) -> Bool {
        let now = Self.now()
        return state.withLock { state in
            guard state.dirty, state.failure == nil else { return false }
            state.changed = now
            if let mode { state.mode = mode }
            if let modified {
                state.modified = modified
                state.lastChange = nil
            }
            return true
        }
    }

    private static func attributeChanges(_ state: borrowing State) -> AttributeChanges {
        AttributeChanges(mode: state.mode, modified: state.lastChange ?? state.modified, changed: state.changed)
    }

    /// Copies plaintext [offset, offset + count) into `buffer`; returns the bytes copied (fewer at the end).
    package func read(offset: UInt64, count: Int, into buffer: UnsafeMutableRawPointer) throws(DarkDiskError) -> Int {
        let chunkSize = UInt64(Self.chunkSize)
        return try state.withLock { (state) throws(DarkDiskError) -> Int in
            try usable(state)
            guard offset < state.size, count > 0 else { return 0 }
            try setAsideSequential(&state)
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
    package func write(offset: UInt64, bytes: UnsafeRawBufferPointer) throws(DarkDiskError) {
        guard !bytes.isEmpty else { return }
        let now = Self.now()
        try state.withLock { (state) throws(DarkDiskError) in try write(bytes, at: offset, now: now, &state) }
    }

    /// Writes `bytes` at the end as it is now, whatever another handle wrote before (a handle opened with
    /// `O_APPEND`, as a local disk appends: the offset the kernel passes comes from a size it may have read
    /// before another process's last append); the offset the bytes went to.
    @discardableResult
    package func append(_ bytes: UnsafeRawBufferPointer) throws(DarkDiskError) -> UInt64 {
        let now = Self.now()
        return try state.withLock { (state) throws(DarkDiskError) -> UInt64 in
            let offset = state.size
            if !bytes.isEmpty { try write(bytes, at: offset, now: now, &state) }
            return offset
        }
    }

    private func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64, now: (seconds: Int64, nanoseconds: UInt32),
                       _ state: inout State) throws(DarkDiskError) {
        guard let base = bytes.baseAddress else { return }
        let chunkSize = UInt64(Self.chunkSize)
        try usable(state)
        let (end, overflow) = offset.addingReportingOverflow(UInt64(bytes.count))
        if overflow || end > state.size { try checkRoom(growingFrom: state.size, to: overflow ? .max : end) }
        if offset == state.size, try appendSequentially(bytes, &state) {
            state.size = end
            state.dirty = true
            state.lastChange = now
            state.changed = now
            return
        }
        try setAsideSequential(&state)
        let staging = try stagingFile(&state)
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
        state.changed = now
    }

    /// Refuses to grow the content from `old` to `new` bytes when the file could never be stored: its sealed
    /// version (`CloudFilePadding.fileLength`) not addressable by a signed 64-bit offset (`EFBIG`), or not
    /// fitting in the space left on the store's disk (`ENOSPC`), at once: a version is sealed whole, every
    /// chunk of zeros a `truncate -s` makes included.
    func checkRoom(growingFrom old: UInt64, to new: UInt64) throws(DarkDiskError) {
        guard let sealed = CloudFilePadding.fileLength(sectionSizes: [0, 0, new]), sealed <= UInt64(Int64.max) else {
            throw DarkDiskError(.tooLarge, "a drive file of \(new) bytes would not fit the file format")
        }
        // (Growth by less than a mebibyte, as every write of a `cp` is, is left to the writes themselves.)
        guard new - min(new, old) >= 1 << 20 else { return }
        var disk = statvfs()
        guard statvfs(directory, &disk) == 0 else { return }
        let free = UInt64(disk.f_bavail) &* UInt64(disk.f_frsize)
        guard sealed - min(sealed, old) <= free else {
            throw DarkDiskError(.io, "growing a drive file to \(new) bytes needs \(sealed) bytes on the store's disk, which has \(free) free", errno: ENOSPC)
        }
    }

    /// Notes a change of the content now though its bytes are as they were (an open with `O_TRUNC`: its
    /// modification and change times move, as on a local disk).
    package func noteChange() {
        let now = Self.now()
        state.withLock { state in
            state.dirty = true
            state.lastChange = now
            state.changed = now
        }
    }

    /// Sets the size: a shorter file loses its end for good, a longer one reads zeros past the old end.
    package func truncate(to size: UInt64) throws(DarkDiskError) {
        let chunkSize = UInt64(Self.chunkSize)
        let now = Self.now()
        try state.withLock { (state) throws(DarkDiskError) in
            try usable(state)
            guard size != state.size else { return }
            if size > state.size { try checkRoom(growingFrom: state.size, to: size) }
            if size == 0 {
                // Everything goes: a sequential version in the making, the staging file's chunks, the base.
                state.sequential = nil
                state.setAside = nil
                state.base = nil
                if let staging = state.staging {
                    do throws(CryptoError) { try staging.removeChunks(from: 0) } catch { throw DarkDiskError(crypto: error) }
                }
                state.baseLimit = 0
            } else {
                try setAsideSequential(&state)
            }
            if size < state.size, size > 0 {
                let chunk = size / chunkSize
                let within = Int(size % chunkSize)
                let staging = try stagingFile(&state)
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
            state.size = size
            state.dirty = true
            state.lastChange = now
            state.changed = now
        }
    }

    /// Seals the content as it is now into a new file (the sequential version, finished, or one sealed here
    /// from every chunk), holding off every other read and write, and runs `store` with it, its header and
    /// the attributes to write with it; when `store` returns the stored version, that becomes the committed
    /// one and the staging file is emptied.
    func commit(_ store: (_ file: UnnamedFile, _ header: CryptoFileHeader,
                          _ attributes: AttributeChanges) throws(DarkDiskError) -> DiskExport) throws(DarkDiskError) -> DiskExport {
        try state.withLock { (state) throws(DarkDiskError) -> DiskExport in
            try usable(state)
            try setAsideSequential(&state)
            let file: UnnamedFile
            let finished: FinishedCryptoFile
            if let setAside = state.setAside, !setAside.file.isPlaced, state.baseLimit == state.size,
               setAside.finished.header.sectionSizes[setAside.finished.header.format.dataSection] == state.size,
               !(state.staging?.holdsChunks ?? false) {
                (file, finished) = setAside
            } else {
                (file, finished) = try seal(state)
            }
            let header = finished.header
            // (If storing fails, the content stays as it was: a set-aside version remains its base.)
            let export = try store(file, header, Self.attributeChanges(state))
            let reader: CryptoFileReader
            do throws(CryptoError) {
                // The stored version is the file just sealed: read with what its writer knows.
                reader = Self.isSameFile(export.retainToken.fileDescriptor, file.fileDescriptor)
                    ? CryptoFileReader(finished: finished, fileDescriptor: export.retainToken.fileDescriptor, owner: export.retainToken)
                    : try export.reader()
                try state.staging?.removeChunks(from: 0)
            } catch {
                throw DarkDiskError(crypto: error)
            }
            state.base = reader
            state.setAside = nil
            state.baseLimit = export.plaintextSize
            state.size = export.plaintextSize
            state.dirty = false
            state.lastChange = nil
            state.mode = nil
            state.modified = nil
            state.changed = nil
            return export
        }
    }

    /// Appends `bytes` to the sequential version, starting one if the content is empty and nothing lies
    /// under it; false when the content is not being written sequentially.
    private func appendSequentially(_ bytes: UnsafeRawBufferPointer, _ state: inout State) throws(DarkDiskError) -> Bool {
        if state.sequential == nil {
            guard state.size == 0, state.baseLimit == 0, !(state.staging?.holdsChunks ?? false) else { return false }
            let file = try newVersionFile()
            do throws(CryptoError) {
                let writer = try Self.versionWriter(file, key: key)
                state.sequential = SequentialVersion(file: file, writer: writer)
            } catch {
                throw DarkDiskError(crypto: error)
            }
        }
        do throws(CryptoError) {
            try state.sequential?.writer.append(bytes)
        } catch {
            state.sequential = nil
            state.failure = DarkDiskError(crypto: error)
            throw DarkDiskError(crypto: error)
        }
        return true
    }

    /// Finishes the sequential version, if one is being written, and makes it the base reads fall through to.
    private func setAsideSequential(_ state: inout State) throws(DarkDiskError) {
        guard let sequential = state.sequential else { return }
        state.sequential = nil
        do throws(CryptoError) {
            _ = try sequential.writer.finish()
            guard let finished = sequential.writer.finishedFile else { throw CryptoError(.io, "the new version was not finished") }
            state.base = CryptoFileReader(finished: finished, fileDescriptor: sequential.file.fileDescriptor, owner: sequential.file)
            state.setAside = (sequential.file, finished)
            state.baseLimit = state.size
        } catch {
            state.failure = DarkDiskError(crypto: error)
            throw DarkDiskError(crypto: error)
        }
    }

    /// The staging file, made at the first write that needs it.
    private func stagingFile(_ state: inout State) throws(DarkDiskError) -> StagingCryptoFile {
        if let staging = state.staging { return staging }
        do throws(CryptoError) {
            let staging: StagingCryptoFile
            do {
                staging = try StagingCryptoFile(directory: directory, chunkSize: Self.chunkSize)
            } catch where error.errno == ENOENT {
                // The staging folder went (removed by hand while the store was open): made again.
                do throws(DarkDiskError) { try FileOperations.makeDirectory(directory) } catch { throw CryptoError(.io, error.message, errno: error.errno) }
                staging = try StagingCryptoFile(directory: directory, chunkSize: Self.chunkSize)
            }
            state.staging = staging
            return staging
        }
        catch {
            throw DarkDiskError(crypto: error)
        }
    }

    /// A writer of a new version into `file`: a cloud file (its metadata and thumbnail sections empty) under
    /// the node's key, so that its upload sends it as it is, with no second and third pass of AES.
    private static func versionWriter(_ file: UnnamedFile, key: SymmetricKey) throws(CryptoError) -> CryptoFileWriter {
        let writer = try CryptoFileWriter(fileDescriptor: file.fileDescriptor, key: key, format: .cloudFile)
        try writer.endSection()
        try writer.endSection()
        return writer
    }

    /// Seals every chunk of the content, in order, into a new file under `key`.
    private func seal(_ state: borrowing State) throws(DarkDiskError) -> (UnnamedFile, FinishedCryptoFile) {
        let chunkSize = UInt64(Self.chunkSize)
        let file = try newVersionFile()
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: Int(chunkSize), alignment: 16)
        defer { scratch.deallocate() }
        do throws(CryptoError) {
            let writer = try Self.versionWriter(file, key: key)
            var position: UInt64 = 0
            while position < state.size {
                try fillThrowingCrypto(position / chunkSize, into: scratch, state)
                let count = Int(min(chunkSize, state.size - position))
                try writer.append(UnsafeRawBufferPointer(start: scratch, count: count))
                position += UInt64(count)
            }
            _ = try writer.finish()
            guard let finished = writer.finishedFile else { throw CryptoError(.io, "the new version was not finished") }
            return (file, finished)
        } catch {
            throw DarkDiskError(crypto: error)
        }
    }

    /// Whether two descriptors are open on one file.
    private static func isSameFile(_ a: Int32, _ b: Int32) -> Bool {
        var first = stat(), second = stat()
        return fstat(a, &first) == 0 && fstat(b, &second) == 0 && first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    /// Throws the failure that ended the content, if one did.
    private func usable(_ state: borrowing State) throws(DarkDiskError) {
        if let failure = state.failure { throw failure }
    }

    /// Chunk `chunk`'s plaintext as the content holds it now, zero-padded to a whole chunk.
    private func fill(_ chunk: UInt64, into scratch: UnsafeMutableRawPointer, _ state: borrowing State) throws(DarkDiskError) {
        do throws(CryptoError) { try fillThrowingCrypto(chunk, into: scratch, state) } catch { throw DarkDiskError(crypto: error) }
    }

    private func fillThrowingCrypto(_ chunk: UInt64, into scratch: UnsafeMutableRawPointer, _ state: borrowing State) throws(CryptoError) {
        let chunkSize = Self.chunkSize
        if let staging = state.staging, try staging.read(chunk: chunk, into: scratch) { return }
        scratch.initializeMemory(as: UInt8.self, repeating: 0, count: chunkSize)
        let start = chunk * UInt64(chunkSize)
        guard let base = state.base, start < state.baseLimit else { return }
        let count = Int(min(UInt64(chunkSize), state.baseLimit - start))
        _ = try base.read(section: base.dataSection, offset: start, count: count,
                          into: UnsafeMutableRawBufferPointer(start: scratch, count: count))
    }

    private static func now() -> (seconds: Int64, nanoseconds: UInt32) {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return (Int64(time.tv_sec), UInt32(time.tv_nsec))
    }
}

extension DiskManager {
    /// Staged content for writing drive file `nodeID`, starting as `base` (nil: empty), sealed under the node's
    /// key into files on the store's disk. `isNew`: a change to commit even if nothing is written (see
    /// `StagedContent`).
    package func stagedContent(for nodeID: NodeID, base: DiskExport?, isNew: Bool = false) throws(DarkDiskError) -> StagedContent {
        try stagedContent(key: outline.nodeKey(nodeID), base: base, isNew: isNew)
    }

    func stagedContent(key: SymmetricKey, base: DiskExport?, isNew: Bool) throws(DarkDiskError) -> StagedContent {
        // (The staging folder is made when the store opens, and again if a staging file finds it gone.)
        try StagedContent(base: base, key: key, directory: location.persistentStaging, isNew: isNew) {
            () throws(DarkDiskError) -> UnnamedFile in try self.newStoredFile(mode: .persistent)
        }
    }

    /// An unnamed file for a new stored file: made in the folder it will be placed in, under the name it
    /// will get, where the file system allows; else in the staging folder.
    func newStoredFile(mode: StorageMode) throws(DarkDiskError) -> UnnamedFile {
        if mode == .persistent, let file = unnamedFiles.withLock({ $0 })?.take() { return file }
        return try makeStoredFile(mode: mode)
    }

    private func makeStoredFile(mode: StorageMode) throws(DarkDiskError) -> UnnamedFile {
        if let file = try unnamedStoredFile(mode: mode) { return file }
        let staging = mode == .persistent ? location.persistentStaging : location.cacheStaging
        try FileOperations.makeDirectory(staging)
        return try UnnamedFile(in: staging)
    }

    /// A new `O_TMPFILE` in the shard folder of the name it will get; nil where the file system has none
    /// (then a named stand-in in the staging folder serves, made only when needed: the orphan sweep removes
    /// stand-ins left unchanged for ten minutes, so none is made ahead).
    private func unnamedStoredFile(mode: StorageMode) throws(DarkDiskError) -> UnnamedFile? {
        let name = FileOperations.randomName()
        let root = mode == .persistent ? location.persistentFiles : location.cacheFiles
        let folder = root + "/" + name.prefix(2)
        // The shard folder exists but for the first file in it: made only then.
        if let file = UnnamedFile(in: folder, named: name) { return file }
        try FileOperations.makeDirectory(folder)
        return UnnamedFile(in: folder, named: name)
    }

    /// Starts making new persistent stored files ahead of need (`UnnamedFilePool`), for as long as the drive
    /// journals.
    func startUnnamedFilePool() {
        let pool = UnnamedFilePool { [weak self] in (try? self?.unnamedStoredFile(mode: .persistent)) ?? nil }
        unnamedFiles.withLock { $0 = pool }
    }
}
