@testable import DarkDiskStore
import Foundation
import Testing

/// The deleter's own bookkeeping: the paths this process marked pending are the only ones a release looks
/// up in the index, so a marking must not outlive a transaction that rolled it back.
@Suite struct FileDeleterTests {
    struct Abort: Error {}

    @Test func aMarkingThatRollsBackIsForgottenAndOneThatCommitsIsKept() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let deleter = manager.files.deleter
        let rolledBack = store.directory + "/rolled-back", kept = store.directory + "/kept"
        #expect(throws: (any Error).self) {
            try deleter.database.write { db in
                try deleter.markPending(db, paths: [rolledBack])
                #expect(FileDeleter.isMarkedHere(rolledBack), "marked before the commit")
                throw Abort()
            }
        }
        #expect(!FileDeleter.isMarkedHere(rolledBack), "the rollback took the marking back")

        #expect(FileManager.default.createFile(atPath: kept, contents: Data("x".utf8)))
        try deleter.database.write { db in try deleter.markPending(db, paths: [kept]) }
        #expect(FileDeleter.isMarkedHere(kept))
        deleter.finishPendingDelete(kept)
        #expect(!FileManager.default.fileExists(atPath: kept) && !FileDeleter.isMarkedHere(kept), "deleted at its release, then forgotten")
    }
}
