import DarkDiskRemote
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The `file://` remote as a bucket: listings by prefix see exactly the objects under it (nested folders
/// too, never the writes in flight or the locks), copies and writes land whole with the remote's mode,
/// and a missing remote folder is unreachable, never empty.
@Suite struct FileRemoteTests {
    private static func folder() throws -> String {
        let path = NSTemporaryDirectory() + "darkdisk-file-remote-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A file given up to the remote is moved in when it is on the bucket's file system (no second copy's
    /// room) and copied when it is not (`EXDEV`); either way the object holds its bytes.
    @Test func aFileGivenUpIsMovedOnItsFileSystemAndCopiedAcross() async throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let remote = FileRemote(root: root)
        let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let near = root + "-near"
        try bytes.write(to: URL(fileURLWithPath: near))
        var before = stat()
        stat(near, &before)
        let moved = try await remote.write("nodes/a/v1.cloud", movingFile: near)
        var landed = stat()
        stat(root + "/nodes/a/v1.cloud", &landed)
        #expect(landed.st_ino == before.st_ino, "the same inode, moved into the bucket")
        #expect(!FileManager.default.fileExists(atPath: near))
        #expect(moved.size == UInt64(bytes.count))
        #expect(try await remote.read("nodes/a/v1.cloud", range: 0..<moved.size, ifMatch: moved.etag) == bytes)

        // /dev/shm is another file system than the temporary folder's disk here (and on CI).
        let far = "/dev/shm/darkdisk-file-remote-" + UUID().uuidString
        try bytes.write(to: URL(fileURLWithPath: far))
        defer { unlink(far) }
        let copied = try await remote.write("nodes/a/v2.cloud", movingFile: far)
        #expect(try await remote.read("nodes/a/v2.cloud", range: 0..<copied.size, ifMatch: copied.etag) == bytes)
    }

    @Test func listingsByPrefixSeeTheirObjectsOnly() async throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let remote = FileRemote(root: root)
        for key in ["records/a.rec", "records/b.rec", "nodes/x/v1.cloud", "nodes/x/v2.cloud", "nodes/y/v1.cloud", "users/u.json"] {
            _ = try await remote.write(key, data: Data(key.utf8), condition: .none)
        }
        try Data("in flight".utf8).write(to: URL(fileURLWithPath: root + "/.tmp/unfinished"))

        #expect(try await remote.list(prefix: "records/").map(\.key) == ["records/a.rec", "records/b.rec"])
        #expect(try await remote.list(prefix: "nodes/").map(\.key) == ["nodes/x/v1.cloud", "nodes/x/v2.cloud", "nodes/y/v1.cloud"])
        #expect(try await remote.list(prefix: "nodes/x/").map(\.key) == ["nodes/x/v1.cloud", "nodes/x/v2.cloud"])
        #expect(try await remote.list(prefix: "nodes/x/v2").map(\.key) == ["nodes/x/v2.cloud"])
        #expect(try await remote.list(prefix: "avatars/").isEmpty, "a folder not made yet holds nothing")
        let everything = try await remote.list(prefix: "").map(\.key)
        #expect(everything.count == 6)
        #expect(!everything.contains { $0.hasPrefix(".") }, "\(everything)")
        let info = try #require(try await remote.list(prefix: "users/").first)
        #expect(info.size == UInt64("users/u.json".utf8.count))
        #expect(try await remote.info("users/u.json")?.etag == info.etag)

        try FileManager.default.removeItem(atPath: root)
        let error = await #expect(throws: RemoteError.self) { _ = try await remote.list(prefix: "records/") }
        #expect(error?.code == .unreachable)
    }

    @Test(arguments: [false, true])
    func objectsLandWholeWithTheRemotesMode(shared: Bool) async throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let remote = FileRemote(root: root, shared: shared)
        let source = root + "-source"
        defer { unlink(source) }
        let bytes = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try bytes.write(to: URL(fileURLWithPath: source))
        let copied = try await remote.write("nodes/n/v1.cloud", fromFile: source)
        let written = try await remote.write("records/n.rec", data: Data("record".utf8), condition: .absent)
        #expect(copied.size == 3_000_000)
        #expect(try Data(contentsOf: URL(fileURLWithPath: root + "/nodes/n/v1.cloud")) == bytes)
        #expect(try String(contentsOfFile: root + "/records/n.rec", encoding: .utf8) == "record")
        for path in [root + "/nodes/n/v1.cloud", root + "/records/n.rec"] {
            var st = stat()
            #expect(stat(path, &st) == 0)
            #expect(st.st_mode & 0o777 == (shared ? 0o644 : 0o600), "\(path)")
        }
        #expect(try await remote.info("records/n.rec")?.etag == written.etag)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/.tmp").isEmpty, "no temporary file stays")

        // A copy from a file that is not there fails and leaves nothing behind.
        await #expect(throws: RemoteError.self) { _ = try await remote.write("nodes/m/v1.cloud", fromFile: root + "/missing") }
        #expect(try await remote.info("nodes/m/v1.cloud") == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/.tmp").isEmpty)
    }
}
