import DarkDisk
import Foundation
import Testing

/// The index's log is copied back into the index in the background (`IndexCheckpointer`): writers make no
/// checkpoint of their own, and still the log stays near its threshold however much is written.
@Suite struct IndexCheckpointerTests {
    @Test(.timeLimit(.minutes(2))) func theLogStaysBoundedWhileWritesGoOn() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let walPath = store.location.indexPath + "-wal"
        let big = String(repeating: "x", count: 200_000)
        var largest: Int64 = 0
        // About 60 MiB through the log: 300 commits of some 50 pages each.
        for round in 0..<300 {
            try manager.setText(big + String(round), for: "checkpoint-test-\(round % 7)")
            if round % 10 == 9 { Thread.sleep(forTimeInterval: 0.05) }
            var st = stat()
            if stat(walPath, &st) == 0 { largest = max(largest, Int64(st.st_size)) }
        }
        #expect(largest > 0, "the index is in WAL mode")
        #expect(largest < 24 << 20, "the log grew to \(largest) bytes: no checkpoint ran")
        #expect(try manager.text("checkpoint-test-5") == big + "299")
    }
}
