// Store measurements for `Scripts/bench store`: start-up and eviction cost at many files, and the cost of
// an import into a full pool against an empty one. Prints `store.FIGURE VALUE UNIT` lines.
import DarkDiskStore
import Foundation

// `darkdisk-bench images ...`: the image manager's figures (ImagesBench.swift).
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "images" {
    ImagesBench.run(Array(CommandLine.arguments.dropFirst(2)))
    exit(0)
}

// `darkdisk-bench records STORE REMOTE-URL PASSPHRASE-FILE N` fills a bucket with N nodes for the pull that
// `Scripts/bench sync` times (RecordsBench.swift).
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "records" {
    RecordsBench.run(Array(CommandLine.arguments.dropFirst(2)))
    exit(0)
}

// `darkdisk-bench fill STORE N` and `darkdisk-bench outline STORE N` build the stores `Scripts/bench list`
// measures (ListBench.swift).
if CommandLine.arguments.count == 4, ["fill", "outline"].contains(CommandLine.arguments[1]), let count = Int(CommandLine.arguments[3]) {
    ListBench.run(CommandLine.arguments[1], store: StoreLocation(directory: CommandLine.arguments[2]), count: count)
    exit(0)
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: darkdisk-bench STORE-DIR FILE-COUNT\n".utf8))
    exit(2)
}
let location = StoreLocation(directory: arguments[1])

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func line(_ name: String, _ value: Double, _ unit: String, _ extra: String = "") {
    print("store.\(name) \(String(format: value < 10 ? "%.3f" : "%.0f", value)) \(unit)\(extra)")
}

do {
    let payload = Data(repeating: 0x5A, count: 1024)
    let manager = try DiskManager.exists(at: location) ? DiskManager(location: location) : DiskManager.create(at: location)
    try manager.files.setMaxSize(UInt64.max >> 2, for: .data)

    /// Mean and worst single import over `sample` imports of 1 KiB cache files.
    func imports(_ prefix: String, sample: Int = 3000) throws -> (mean: Double, worst: Double) {
        var worst = 0.0
        let total = try seconds {
            for i in 0..<sample {
                worst = max(worst, try seconds { try manager.importNodeFile(DiskImport(cleartextData: payload), nodeID: NodeID("\(prefix)-\(i)")) })
            }
        }
        return (total / Double(sample), worst)
    }

    // Imports into an empty pool.
    let empty = try imports("empty")

    // Fill the index to `count` files.
    var filled = try manager.files.status().map(\.fileCount).reduce(0, +)
    let fill = try seconds {
        while filled < count {
            try manager.importNodeFile(DiskImport(cleartextData: payload), nodeID: NodeID("fill-\(filled)"))
            filled += 1
        }
    }
    FileHandle.standardError.write(Data("indexed \(filled) files (\(Int(fill)) s)\n".utf8))

    // Imports into a full pool: the limit is the current size, so imports keep evicting.
    let cached = try manager.files.storageSize(of: .data, mode: .cache)
    try manager.files.setMaxSize(cached, for: .data)
    let full = try imports("full")
    line("import_empty_pool", empty.mean * 1e3, "ms")
    line("import_full_pool", full.mean * 1e3, "ms", " ratio \(String(format: "%.2f", full.mean / empty.mean)) vs import_empty_pool")
    line("import_empty_pool_worst", empty.worst * 1e3, "ms")
    line("import_full_pool_worst", full.worst * 1e3, "ms", " ratio \(String(format: "%.2f", full.worst / empty.worst)) vs import_empty_pool_worst")

    // Evicting 10 % of the pool in one go.
    let evictedBytes = try manager.files.storageSize(of: .data, mode: .cache) / 10
    let evictions = try seconds { try manager.files.setMaxSize(try manager.files.storageSize(of: .data, mode: .cache) - evictedBytes, for: .data) }
    line("evict_10_percent_of_\(count)", evictions, "s")
    try manager.files.setMaxSize(UInt64.max >> 2, for: .data)
} catch {
    FileHandle.standardError.write(Data("darkdisk-bench: \(error)\n".utf8))
    exit(1)
}

// Start-up: open the store with `count` files indexed, as a new process would.
do {
    let open = try seconds { _ = try DiskManager(location: location) }
    line("open_\(count)_files", open, "s", " ratio \(String(format: "%.2f", open / 3.65)) vs PINCache_3.65s_published")
} catch {
    FileHandle.standardError.write(Data("darkdisk-bench: \(error)\n".utf8))
    exit(1)
}
