import DarkDiskStore
import DarkDiskCrypto
import DarkDiskSync
@testable import DarkDiskDrive
import Foundation
import Logging
import Testing

/// The drive as a program calls it, without a mount: every answer shows what was written before it
/// (read-your-writes), whether the change waits in memory (a new file), in the journal (a `close`) or
/// is in the index.
@Suite struct DriveTests {
    /// A fresh store (gone at `remove`) and the drive over it, its journal running as a mount runs it.
    private final class Fixture {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("drive-\(UUID().uuidString)").path
        let store: DiskManager
        let drive: Drive
        let journaled: Bool

        init() throws {
            store = try DiskManager.create(at: StoreLocation(directory: directory))
            drive = Drive(store: store, logger: Logger(label: "darkdisk.test.drive"))
            journaled = try drive.start()
        }

        func remove() {
            _ = drive.stop(timeout: 30)
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// Makes file `name` in `folder` holding `text`, closed (committed) and released.
        @discardableResult
        func write(_ name: String, _ text: String, in folder: NodeID? = nil) throws -> NodeID {
            let (node, writer, _) = try drive.createFile(name, in: folder, permissions: 0o644)
            defer { drive.release(writer) }
            try Data(text.utf8).withUnsafeBytes { try writer.content.write(offset: 0, bytes: $0) }
            try drive.commit(writer)
            return node.id
        }

        /// The plaintext of node `id`'s stored data, as a reader of `/nodes/<id>/data` gets it.
        func text(of id: NodeID) throws -> String? {
            guard let export = try drive.currentStore().files.nodeFile(id, kind: .data) else { return nil }
            let reader = try export.reader()
            let bytes = try reader.read(section: reader.dataSection, offset: 0, count: Int(reader.plaintextSize(ofSection: reader.dataSection)))
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    @Test func aClosedFileIsSeenAtOnceByLookupsListingsAndOtherViews() throws {
        let fixture = try Fixture(), drive = fixture.drive
        defer { fixture.remove() }
        #expect(fixture.journaled, "the journal runs in process as under a mount")
        let id = try fixture.write("notes.txt", "twelve bytes")
        let found = try #require(try drive.lookup("notes.txt", in: nil))
        #expect(found.node.id == id && found.attributes.kind == .file && found.attributes.size == 12)
        #expect(found.attributes.permissions == 0o644)
        #expect(try drive.listing(of: nil).map { "\($0.name) \($0.attributes.size)" } == ["notes.txt 12"])
        #expect(try fixture.text(of: id) == "twelve bytes")
        // A second version replaces the first everywhere at once.
        let writer = try drive.openForWriting(id, truncating: true)
        try Data("short".utf8).withUnsafeBytes { try writer.content.write(offset: 0, bytes: $0) }
        try drive.commit(writer)
        drive.release(writer)
        #expect(try drive.lookup("notes.txt", in: nil)?.attributes.size == 5)
        #expect(try fixture.text(of: id) == "short")
    }

    @Test func aFileBeingWrittenShowsItsWritersSizeAndModeBeforeItsClose() throws {
        let fixture = try Fixture(), drive = fixture.drive
        defer { fixture.remove() }
        let folder = try drive.makeFolder("docs", in: nil, permissions: 0o755)
        let (node, writer, made) = try drive.createFile("draft.md", in: folder.id, permissions: 0o600)
        #expect(made.size == 0 && made.permissions == 0o600)
        // Not in the index yet, yet found by name and listed.
        #expect(try drive.lookup("draft.md", in: folder.id)?.node.id == node.id)
        try Data(repeating: 7, count: 100_000).withUnsafeBytes { try writer.content.write(offset: 0, bytes: $0) }
        try drive.setAttributes(of: node.id, permissions: 0o640, modified: DriveTime(seconds: 1_000_000_000, nanoseconds: 5))
        let open = try #require(try drive.attributes(of: node.id, kind: .file)).attributes
        #expect(open.size == 100_000 && open.permissions == 0o640)
        #expect(open.modified == DriveTime(seconds: 1_000_000_000, nanoseconds: 5))
        drive.release(writer)
        // Closed: the index has the content and the attributes the writer held.
        let closed = try #require(try drive.listing(of: folder.id).first).attributes
        #expect(closed.size == 100_000 && closed.permissions == 0o640)
        #expect(closed.modified == DriveTime(seconds: 1_000_000_000, nanoseconds: 5))
        #expect(try drive.store.driveNode(node.id)?.attributes.mode == 0o640)
    }

    @Test func renamesAndRemovesAreSeenByTheNextLookup() throws {
        let fixture = try Fixture(), drive = fixture.drive
        defer { fixture.remove() }
        let a = try fixture.write("a.txt", "A")
        let b = try fixture.write("b.txt", "BB")
        let folder = try drive.makeFolder("box", in: nil, permissions: 0o755)
        // Over an existing name only when allowed.
        let nodeA = try #require(try drive.currentStore().driveNode(a))
        #expect(throws: DarkDiskError.self) { try drive.move(nodeA, to: "b.txt", in: nil, replacing: false) }
        #expect(try drive.move(nodeA, to: "b.txt", in: nil, replacing: true) == b)
        #expect(try drive.lookup("a.txt", in: nil) == nil)
        #expect(try drive.lookup("b.txt", in: nil)?.node.id == a)
        try drive.move(try #require(try drive.currentStore().driveNode(a)), to: "moved.txt", in: folder.id, replacing: true)
        #expect(try drive.children(of: folder.id).map(\.name) == ["moved.txt"])
        // A folder is not unlinked, a file is not rmdir'ed, a folder with something in it stays.
        #expect(throws: DarkDiskError.self) { try drive.remove("box", in: nil, isFolder: false) }
        #expect(throws: DarkDiskError.self) { try drive.remove("moved.txt", in: folder.id, isFolder: true) }
        #expect(throws: DarkDiskError.self) { try drive.remove("box", in: nil, isFolder: true) }
        try drive.remove("moved.txt", in: folder.id, isFolder: false)
        try drive.remove("box", in: nil, isFolder: true)
        #expect(try drive.listing(of: nil).isEmpty)
        #expect(throws: DarkDiskError.self) { try drive.remove("box", in: nil, isFolder: true) }
    }

    @Test func linksAndTruncationByName() throws {
        let fixture = try Fixture(), drive = fixture.drive
        defer { fixture.remove() }
        let id = try fixture.write("big.bin", String(repeating: "x", count: 5_000))
        let link = try drive.makeLink("latest", to: "big.bin", in: nil)
        #expect(try drive.linkTarget(link.id) == "big.bin")
        let shown = try #require(try drive.lookup("latest", in: nil)).attributes
        #expect(shown.kind == .symlink && shown.permissions == 0o777 && shown.size == 7 && shown.allocated == 0)
        try drive.truncate(id, to: 10)
        #expect(try drive.lookup("big.bin", in: nil)?.attributes.size == 10)
        #expect(try fixture.text(of: id) == "xxxxxxxxxx")
        // A file made without opening it is empty and in the index at once.
        let empty = try drive.makeFile("empty", in: nil, permissions: 0o600)
        #expect(try drive.store.driveNode(empty.id)?.name == "empty")
        #expect(try drive.lookup("empty", in: nil)?.attributes.size == 0)
    }

    @Test func extendedAttributesFollowSetxattrsRules() throws {
        let fixture = try Fixture(), drive = fixture.drive
        defer { fixture.remove() }
        let id = try fixture.write("tagged", "t")
        try drive.setExtendedAttribute("user.colour", to: Array("blue".utf8), of: id, mustCreate: true)
        #expect(try drive.extendedAttributes(of: id) == ["user.colour": Array("blue".utf8)])
        #expect(throws: DarkDiskError.self) { try drive.setExtendedAttribute("user.colour", to: [1], of: id, mustCreate: true) }
        #expect(throws: DarkDiskError.self) { try drive.setExtendedAttribute("user.size", to: [1], of: id, mustReplace: true) }
        #expect(throws: DarkDiskError.self) { try drive.setExtendedAttribute("user.big", to: Array(repeating: 1, count: 70_000), of: id) }
        try drive.setExtendedAttribute("user.colour", to: nil, of: id)
        #expect(try drive.extendedAttributes(of: id).isEmpty)
        #expect(throws: DarkDiskError.self) { try drive.setExtendedAttribute("user.colour", to: nil, of: id) }
    }

    @Test func readersAreToldOfEachNewVersion() throws {
        let fixture = try Fixture(), drive = fixture.drive
        defer { fixture.remove() }
        let told = Told()
        drive.observeVersions { id in told.ids.withLock { $0.append(id) } }
        let id = try fixture.write("watched", "one")
        #expect(told.ids.withLock { $0.contains(id) })
        guard case .stored = try drive.currentData(of: id) else {
            Issue.record("the committed version is not stored")
            return
        }
    }

    @Test func manyFilesClosedInARowAreAllListedWithTheirSizes() throws {
        let fixture = try Fixture(), drive = fixture.drive
        defer { fixture.remove() }
        for i in 0..<300 { try fixture.write(String(format: "f%03d", i), String(repeating: "z", count: i)) }
        let listed = try drive.listing(of: nil)
        #expect(listed.count == 300)
        #expect(listed.allSatisfy { $0.attributes.size == UInt64(Int($0.name.dropFirst())!) })
    }
}

/// The node IDs an observer was told of.
private final class Told: Sendable {
    let ids = Locked<[NodeID]>([])
}
