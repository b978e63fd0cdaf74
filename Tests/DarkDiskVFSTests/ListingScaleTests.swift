@testable import DarkDiskStore
import DarkDiskCrypto
import DarkDiskTestTraits
@testable import DarkDiskVFS
import Foundation
import Logging
import Testing

/// Listing `/nodes` was quadratic (each lookup scanned the whole file table; 21,264 nodes
/// took 105 s to `ls -l`). What `ls -l`, `find` and `du` make the driver do for every entry — list the
/// folder, look each name up, stat it, list and stat its files — must cost a bounded number of index
/// statements and SQLite steps per entry, however many nodes the store has.
@Suite(.ownThreads) struct ListingScaleTests {
    @Test func listingTwentyThousandNodesCostsABoundedIndexWorkPerEntry() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("listing-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let manager = try DiskManager.create(at: StoreLocation(directory: directory))
        // 2,000 nodes with a stored file (a file table that a scan per lookup would walk every time) and
        // 18,000 that only the remote's outline lists.
        let stored = 2000, listed = 18_000
        for index in 0..<stored {
            try manager.importNodeFile(DiskImport(cleartextData: Data([UInt8(index & 0xFF)])), nodeID: NodeID("s\(index)"))
        }
        let key = SymmetricKey.random()
        try manager.outline.update((0..<listed).map { index in
            let id = try! NodeID("r\(index)")
            return OutlineEntry(nodeID: id, name: nil, parentID: nil, metadataSize: 0, thumbnailSize: 0,
                                dataSize: 1000, wrappedKey: manager.keys.wrap(key, for: .node(id)), cloudETag: "e\(index)")
        })
        let fs = VFS(manager: manager, logger: Logger(label: "test"))

        // The store's own maintenance rounds (about 15 statements every 2 s) wait while the work is counted:
        // under a sanitizer the listing takes minutes, and their statements outnumbered the listing's.
        try manager.files.maintenanceQueue.sync { () throws -> Void in
            // `ls /nodes`: one listing of all of them, O(n) in all.
            let started = Date()
            var before = manager.indexStatistics
            let names = try fs.children(of: .nodes)
            let listing = manager.indexStatistics - before
            #expect(names.count == stored + listed)
            // A few statements, whatever the count: far from one per node (20,000).
            #expect(listing.statements <= 200, "statements for the listing: \(listing.statements)")
            #expect(Double(listing.steps) / Double(names.count) <= 50, "SQLite steps per listed node: \(Double(listing.steps) / Double(names.count))")

            // Then, for every tenth node (spread over both kinds): `ls -l` looks each name up and stats it;
            // `find` and `du` list the node's folder, look up and stat each file in it.
            before = manager.indexStatistics
            let sample = stride(from: 0, to: names.count, by: 10).map { names[$0].0 }
            var files = 0
            for name in sample {
                let folder = try #require(try fs.child(of: .nodes, named: name))
                _ = try #require(try fs.current(folder))
                for (fileName, _) in try fs.children(of: folder) {
                    let file = try #require(try fs.child(of: folder, named: fileName))
                    _ = try #require(try fs.current(file))
                    files += 1
                }
            }
            let work = manager.indexStatistics - before
            #expect(files == sample.count)
            let entries = Double(sample.count)
            // Measured: 15 statements (5 reads) and about 165 steps per node; a scan of the file table would add
            // 2,000 steps to every lookup.
            #expect(Double(work.statements) / entries <= 16, "statements per node: \(Double(work.statements) / entries)")
            #expect(Double(work.steps) / entries <= 400, "SQLite steps per node: \(Double(work.steps) / entries)")
            print("listing \(names.count) nodes: \(listing.statements) statements, \(listing.steps) steps; per node looked up: "
                  + "\(Double(work.statements) / entries) statements, \(Double(work.steps) / entries) steps (\(Date().timeIntervalSince(started)) s)")
        }
    }
}
