import DarkDiskStore
import DarkDiskCrypto
import Foundation

/// The stores `Scripts/bench list` lists through a mount: `fill` gives N nodes a stored
/// 1 KiB data file each (the shape gocryptfs is given as N folders of one 1 KiB file); `outline` lists N
/// nodes that only the remote's outline knows (as a `pull` of a large bucket leaves them), for the daemon's
/// memory at that scale.
enum ListBench {
    static func run(_ what: String, store location: StoreLocation, count: Int) {
        do {
            let manager = try DiskManager.exists(at: location) ? DiskManager(location: location) : DiskManager.create(at: location)
            try manager.files.setMaxSize(UInt64.max >> 2, for: .data)
            let started = Date()
            if what == "fill" {
                let payload = Data(repeating: 0x5A, count: 1024)
                for index in 0..<count {
                    try manager.importNodeFile(DiskImport(cleartextData: payload), nodeID: NodeID(String(format: "n%07d", index)))
                }
            } else {
                let key = SymmetricKey.random()
                for batch in stride(from: 0, to: count, by: 10_000) {
                    try manager.outline.update((batch..<min(batch + 10_000, count)).map { index in
                        let id = try NodeID(String(format: "o%07d", index))
                        return OutlineEntry(nodeID: id, name: nil, parentID: nil, metadataSize: 0, thumbnailSize: 0, dataSize: 1024,
                                            wrappedKey: manager.keys.wrap(key, for: .node(id)), cloudETag: "\"e\(index)\"")
                    })
                }
            }
            FileHandle.standardError.write(Data("darkdisk-bench: \(what) of \(count) nodes in \(Int(Date().timeIntervalSince(started))) s\n".utf8))
        } catch {
            FileHandle.standardError.write(Data("darkdisk-bench: \(error)\n".utf8))
            exit(1)
        }
    }
}
