import DarkDiskStore
import DarkDiskCrypto
import Foundation
import Testing

/// The content of a drive file open for writing (`StagedContent`): a file written from its start to its end
/// goes straight into its next version; any other write, read or truncation midway keeps every byte; a
/// commit stores exactly what was written, with the attributes set before it; a failed commit loses nothing.
@Suite struct StagedContentTests {
    static let chunk = 64 * 1024

    /// A store with one new drive file, and that file's content opened for writing.
    static func newFile(_ store: TemporaryStore) throws -> (DiskManager, NodeID, StagedContent) {
        let manager = try store.create()
        let node = try manager.createDriveNode(named: "file", in: nil, attributes: NodeAttributes(kind: .file, mode: 0o644))
        return (manager, node.id, try manager.stagedContent(for: node.id, base: nil, isNew: true))
    }

    static func write(_ content: StagedContent, _ bytes: Data, at offset: Int) throws {
        try bytes.withUnsafeBytes { try content.write(offset: UInt64(offset), bytes: $0) }
    }

    static func read(_ content: StagedContent, _ offset: Int, _ count: Int) throws -> Data {
        var buffer = [UInt8](repeating: 0xEE, count: count)
        let got = try buffer.withUnsafeMutableBytes { try content.read(offset: UInt64(offset), count: count, into: $0.baseAddress!) }
        return Data(buffer.prefix(got))
    }

    static func stored(_ manager: DiskManager, _ id: NodeID) throws -> Data {
        try decrypt(try #require(try manager.files.nodeFile(id, kind: .data)))
    }

    @Test(arguments: [0, 1, chunk - 1, chunk, chunk + 1, 5 * chunk + 12_345])
    func aFileWrittenInOrderIsStoredAsWritten(size: Int) throws {
        let store = try TemporaryStore()
        let (manager, id, content) = try Self.newFile(store)
        let bytes = TemporaryStore.bytes(size, seed: UInt64(size) + 3)
        var offset = 0
        while offset < size {
            let piece = min(4097, size - offset)
            try Self.write(content, bytes.subdata(in: offset..<offset + piece), at: offset)
            offset += piece
        }
        #expect(content.size == UInt64(size))
        let export = try #require(try manager.commitDriveFile(id, content: content))
        #expect(export.plaintextSize == UInt64(size))
        #expect(try Self.stored(manager, id) == bytes)
        #expect(!content.isDirty)
        // Nothing named was left behind in the staging folder, and the store holds no plaintext.
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.location.persistentStaging).isEmpty)
        if size >= 64 {
            #expect(try Data(contentsOf: URL(fileURLWithPath: export.cryptoFile.path)).range(of: bytes.prefix(64)) == nil)
        }
    }

    @Test func readsWritesElsewhereAndTruncationsMidwayKeepEveryByte() throws {
        let store = try TemporaryStore()
        let (manager, id, content) = try Self.newFile(store)
        var model = TemporaryStore.bytes(3 * Self.chunk + 100, seed: 11)
        try Self.write(content, model, at: 0)
        // A read sets the version in the making aside; appending then goes on over it.
        #expect(try Self.read(content, Self.chunk - 10, 30) == model.subdata(in: Self.chunk - 10..<Self.chunk + 20))
        let more = TemporaryStore.bytes(1000, seed: 12)
        try Self.write(content, more, at: model.count)
        model += more
        let middle = Data(repeating: 7, count: 70_000)
        try Self.write(content, middle, at: 5000)
        model.replaceSubrange(5000..<75_000, with: middle)
        try content.truncate(to: 2 * UInt64(Self.chunk) + 3)
        model = model.prefix(2 * Self.chunk + 3)
        // Past the end: the gap reads as zeros.
        let tail = Data("tail".utf8)
        try Self.write(content, tail, at: model.count + 500)
        model += Data(count: 500) + tail
        #expect(try Self.read(content, 0, model.count + 10) == model)
        try manager.commitDriveFile(id, content: content, durable: true)
        #expect(try Self.stored(manager, id) == model)

        // The committed version is the base of the next changes: a write in place and an append.
        try Self.write(content, Data("HEAD".utf8), at: 0)
        model.replaceSubrange(0..<4, with: Data("HEAD".utf8))
        try Self.write(content, Data("END".utf8), at: model.count)
        model += Data("END".utf8)
        try manager.commitDriveFile(id, content: content)
        #expect(try Self.stored(manager, id) == model)
    }

    /// An append goes at the end as the content has it, whatever offset its writer believed (the kernel's
    /// cached size, outrun by another handle): two threads appending lines, with commits between them, keep
    /// every line whole, and a write at a stale offset would have overwritten one.
    @Test func appendsFromTwoWritersKeepEveryLine() async throws {
        let store = try TemporaryStore()
        let (manager, id, content) = try Self.newFile(store)
        try Self.write(content, Data("start\n".utf8), at: 0)
        let placed = try Data("late\n".utf8).withUnsafeBytes { try content.append($0) }
        #expect(placed == 6 && content.size == 11, "appended at the end, not where a stale size said")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in ["A", "B"] {
                group.addTask {
                    for i in 1...300 {
                        _ = try Data("\(writer)\(i)\n".utf8).withUnsafeBytes { try content.append($0) }
                        if i % 50 == 0 { _ = try manager.commitDriveFile(id, content: content) }
                    }
                }
            }
            try await group.waitForAll()
        }
        _ = try manager.commitDriveFile(id, content: content)
        let lines = String(decoding: try Self.stored(manager, id), as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.count == 602 && Set(lines) == Set(["start", "late"] + (1...300).flatMap { ["A\($0)", "B\($0)"] }))
    }

    @Test func truncatingToNothingStartsAFreshVersionInOrder() throws {
        let store = try TemporaryStore()
        let (manager, id, content) = try Self.newFile(store)
        try Self.write(content, TemporaryStore.bytes(200_000, seed: 21), at: 0)
        try manager.commitDriveFile(id, content: content)
        // Opened again with O_TRUNC, as `cp` over an existing file does.
        let again = try manager.stagedContent(for: id, base: try manager.files.nodeFile(id, kind: .data))
        #expect(again.size == 200_000)
        try again.truncate(to: 0)
        let fresh = TemporaryStore.bytes(90_000, seed: 22)
        try Self.write(again, fresh.prefix(50_000), at: 0)
        try Self.write(again, fresh.suffix(40_000), at: 50_000)
        try manager.commitDriveFile(id, content: again)
        #expect(try Self.stored(manager, id) == fresh)
    }

    @Test func attributesSetBeforeTheCloseAreCommittedWithTheContent() throws {
        let store = try TemporaryStore()
        let (manager, id, content) = try Self.newFile(store)
        try Self.write(content, Data("hello".utf8), at: 0)
        #expect(content.deferAttributes(mode: 0o600, modified: (1_234_567_890, 5)))
        #expect(content.pendingAttributes.mode == 0o600)
        try manager.commitDriveFile(id, content: content)
        let node = try #require(try manager.driveNode(id))
        #expect(node.attributes.mode == 0o600)
        #expect(node.attributes.modifiedSeconds == 1_234_567_890 && node.attributes.modifiedNanoseconds == 5)
        // Nothing is due now: the caller writes attributes itself.
        #expect(!content.deferAttributes(mode: 0o644, modified: nil))
        #expect(content.pendingAttributes.mode == nil)
    }

    @Test func aCommitThatCannotLandKeepsTheContent() throws {
        let store = try TemporaryStore()
        let (manager, id, content) = try Self.newFile(store)
        let bytes = TemporaryStore.bytes(150_000, seed: 31)
        try Self.write(content, bytes, at: 0)
        // Deleted while it was being written: the commit stores nothing, and the holders still read it all.
        try manager.deleteDriveNode(id)
        #expect(try manager.commitDriveFile(id, content: content) == nil)
        #expect(try Self.read(content, 0, bytes.count) == bytes)
        #expect(content.isDirty)
        #expect(try manager.files.nodeFile(id, kind: .data) == nil)
        let files = FileManager.default.enumerator(atPath: store.location.persistentFiles)?.allObjects.compactMap { $0 as? String } ?? []
        #expect(files.allSatisfy { !$0.hasSuffix(".ddf") }, "no stored file was left: \(files)")
    }
}
