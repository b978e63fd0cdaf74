@testable import DarkDiskStore
import DarkDiskTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Scratch files (a cloud file composed for an upload) are kept between uses, emptied and locked, so a
/// stream of uploads makes and frees no inode (ext4 without a journal skips every inode freed in the last
/// five minutes when it makes a new one); at most `ScratchFilePool.limit` are kept, one removed by a failed
/// writer is not, and `releaseScratchFiles` (a command's end) and the store's closing remove them.
@Suite struct ScratchFileTests {
    @Test func aReleasedScratchFileIsKeptEmptyAndUsedAgain() async throws {
        let store = try TemporaryStore()
        var manager: DiskManager? = try store.create()
        let staging = store.location.cacheStaging
        var firstInode: ino_t = 0
        do {
            let scratch = try await #require(manager).makeScratchFile()
            try Data(repeating: 7, count: 100_000).write(to: URL(fileURLWithPath: scratch.path))
            firstInode = try inode(scratch.path)
        }
        // Kept, emptied, still locked (the orphan sweep and `check` leave a locked staging file alone).
        #expect(try names(staging).count == 1)
        let keptPath = staging + "/" + (try names(staging))[0]
        #expect(try size(keptPath) == 0)
        #expect(!canLockExclusively(keptPath))
        do {
            let again = try await #require(manager).makeScratchFile()
            #expect(again.path == keptPath)
            #expect(try inode(again.path) == firstInode, "the same inode, not a new one")
        }

        // Many at once: the first `limit` released are kept, the others removed.
        do {
            let many = try (0..<(ScratchFilePool.limit + 3)).map { _ in try #require(manager).makeScratchFile() }
            #expect(Set(many.map(\.path)).count == many.count)
        }
        #expect(try names(staging).count == ScratchFilePool.limit)

        // One its writer removed (a failed composition unlinks the path) is not kept.
        do {
            let scratch = try await #require(manager).makeScratchFile()
            unlink(scratch.path)
        }
        #expect(try names(staging).count == ScratchFilePool.limit - 1)

        // Released before the process exits (a command's end), they go; a later one is made anew.
        try #require(manager).releaseScratchFiles()
        #expect(try names(staging).isEmpty)
        do { _ = try await #require(manager).makeScratchFile() }
        #expect(try names(staging).count == 1)

        // The store's closing removes what it kept (at the last reference's release: a background task of
        // the store may hold one a moment longer on a loaded machine).
        manager = nil
        #expect(try await eventually(within: 60) { try names(staging).isEmpty })
    }

    private func names(_ folder: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".scratch") }
    }

    private func inode(_ path: String) throws -> ino_t {
        var st = stat()
        try #require(stat(path, &st) == 0)
        return st.st_ino
    }

    private func size(_ path: String) throws -> Int {
        var st = stat()
        try #require(stat(path, &st) == 0)
        return Int(st.st_size)
    }

    private func canLockExclusively(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return flock(fd, LOCK_EX | LOCK_NB) == 0
    }
}
