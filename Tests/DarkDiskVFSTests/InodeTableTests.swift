import DarkDiskStore
@testable import DarkDiskVFS
import Testing

/// `InodeTable` on its own: one inode per version of a file, folders stable, stale versions dropped once
/// the kernel forgets them (and only then).
@Suite struct InodeTableTests {
    @Test func versionsGetTheirOwnInodesAndStaleOnesGoWhenForgotten() throws {
        var table = InodeTable()
        let id = try NodeID("n")
        let data = FSEntry.nodeFile(id, .data)
        let folder = table.inode(for: .nodeDirectory(id))
        #expect(table.inode(for: .nodeDirectory(id)) == folder, "a folder keeps its number")
        let v1 = table.inode(for: data, version: .stored(1))
        #expect(table.inode(for: data, version: .stored(1)) == v1)
        table.lookedUp(v1)
        table.lookedUp(v1)
        let v2 = table.inode(for: data, version: .remote("etag"))
        #expect(v2 != v1 && v2 != folder)
        table.lookedUp(v2)
        // The old version stays while the kernel holds a reference (an open file keeps reading it).
        table.forget(v1, count: 1)
        #expect(table.key(for: v1)?.version == .stored(1))
        table.forget(v1, count: 1)
        #expect(table.key(for: v1) == nil, "a stale version the kernel forgot is gone")
        // The newest version stays, even forgotten: the next lookup gets the same number.
        table.forget(v2, count: 1)
        #expect(table.key(for: v2)?.entry == data)
        #expect(table.inode(for: data, version: .remote("etag")) == v2)
        #expect(table.existingInode(for: .nodeDirectory(id)) == folder)
    }
}
