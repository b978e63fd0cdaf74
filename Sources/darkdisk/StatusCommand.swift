import ArgumentParser
import DarkDisk
import Foundation

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show each pool's size (all, persistent, cached), limit and default expiration.")

    @OptionGroup var storeOptions: StoreOptions

    @Flag(help: "Print JSON instead of a table.")
    var json = false

    func run() throws {
        let manager = try storeOptions.open()
        let pools = try manager.status()
        let remote = try StoreRemote.url(for: manager)
        if json {
            struct Report: Encodable {
                let store: String
                let cache: String
                let remote: String
                /// True while the store uses its own folder (no remote set).
                let remoteIsDefault: Bool
                let pools: [Pool]
                struct Pool: Encodable {
                    let name: String; let size: UInt64; let persistentSize: UInt64; let cachedSize: UInt64
                    let partialSize: UInt64; let partialDownloads: Int
                    let files: Int; let maxSize: UInt64; let defaultExpiration: Double
                }
            }
            let report = Report(store: manager.location.dataDirectory, cache: manager.location.cacheDirectory,
                                remote: remote.url, remoteIsDefault: remote.isDefault, pools: pools.map {
                .init(name: $0.pool.rawValue, size: $0.size, persistentSize: $0.persistentSize, cachedSize: $0.cachedSize,
                      partialSize: $0.partialSize, partialDownloads: $0.partialCount, files: $0.fileCount, maxSize: $0.settings.maxSize, defaultExpiration: $0.settings.defaultExpiration)
            })
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
            return
        }
        print("store \(manager.location.dataDirectory)")
        print("cache \(manager.location.cacheDirectory)")
        print("remote \(remote.url)\(remote.isDefault ? " (the store's own folder: no remote set)" : "")")
        let header = ["pool", "files", "size", "persistent", "cached", "partial", "max", "expiration"]
        var rows = [header]
        for status in pools {
            let expiration = status.settings.defaultExpiration > 0 ? "\(Int(status.settings.defaultExpiration))s" : "never"
            rows.append([status.pool.rawValue, "\(status.fileCount)", "\(status.size)", "\(status.persistentSize)",
                         "\(status.cachedSize)", status.partialCount > 0 ? "\(status.partialSize) (\(status.partialCount))" : "0",
                         "\(status.settings.maxSize)", expiration])
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            print(row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }.joined(separator: "  "))
        }
    }
}
