@testable import DarkDiskStore
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// An unnamed file gets its name once, with the bytes written to it, whichever way the kernel lets it be
/// linked: by its descriptor (`AT_EMPTY_PATH`) or through `/proc/self/fd`; a missing folder is made.
@Suite(.serialized) struct UnnamedFileTests {
    @Test(arguments: [true, false])
    func aFileIsNamedWithItsBytesEitherWay(byDescriptor: Bool) throws {
        // (A folder of its own, not a store's: a store's orphan sweep would take these unindexed files.)
        let store = try TemporaryStore()
        let shard = store.directory + "/zz"
        try FileManager.default.createDirectory(atPath: shard, withIntermediateDirectories: true)
        let saved = UnnamedFile.linksByDescriptor.load(ordering: .relaxed)
        UnnamedFile.linksByDescriptor.store(byDescriptor, ordering: .relaxed)
        defer { UnnamedFile.linksByDescriptor.store(saved, ordering: .relaxed) }

        let file = try #require(UnnamedFile(in: shard, named: "zz-one"))
        let bytes = Array("named once".utf8)
        #expect(write(file.fileDescriptor, bytes, bytes.count) == bytes.count)
        try file.place(at: shard + "/zz-one")
        #expect(file.isPlaced)
        #expect(FileManager.default.contents(atPath: shard + "/zz-one") == Data(bytes))

        // Into a folder not made yet (a new shard): made, then linked.
        let other = try #require(UnnamedFile(in: shard, named: "zz-two"))
        let missing = store.directory + "/new-shard/zz-two"
        try other.place(at: missing)
        #expect(FileManager.default.fileExists(atPath: missing))
        // A name taken already: refused, nothing replaced.
        let third = try #require(UnnamedFile(in: shard, named: "zz-three"))
        #expect(throws: DarkDiskError.self) { try third.place(at: shard + "/zz-one") }
        #expect(FileManager.default.contents(atPath: shard + "/zz-one") == Data(bytes))
    }
}
