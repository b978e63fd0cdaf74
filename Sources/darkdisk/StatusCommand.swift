import ArgumentParser
import DarkDiskStore
import DarkDiskCloud
import Foundation

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show where the store is mounted, each pool's size (all, persistent, cached), limit and default expiration, the downloads in flight, the upload queue and conflict copies.",
        discussion: """
            The mount is named by its mount point and daemon PID, or said to have died when its daemon was \
            killed without unmounting. The downloads in flight are those of the store's other processes (a mount daemon, a fetch), each \
            with its process ID, bytes, rate and time left. The upload queue is summed up by state (changes and \
            bytes), then its first five changes by name: pending, uploading (by which process) or failed (with \
            the last error); --json lists every one. "partial" counts the bytes of downloads cut short, kept \
            to resume, in that many files. A conflict copy is a node a push made when the \
            remote had changed since this store last saw the node: the remote's version kept the node, and \
            the local change is the copy, listed until it is deleted.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Flag(help: "Print JSON instead of a table.")
    var json = false

    func run() throws {
        let manager = try storeOptions.open()
        let pools = try manager.files.status()
        let remote = try StoreRemote.url(for: manager)
        let boards = TransferBoard.read(manager.location)
        let conflicts = try manager.outline.conflictCopies()
        // Pinned files not here yet: the running mount downloads them.
        let pinnedMissing = try manager.outline.pinnedNodesToKeep().filter { !$0.stored }
        let pinnedBytes = pinnedMissing.reduce(UInt64(0)) { $0 + $1.size }
        let mount = MountLock.state(manager.location)
        if json {
            struct Report: Encodable {
                let store: String
                let cache: String
                let remote: String
                /// True while the store uses its own folder (no remote set).
                let remoteIsDefault: Bool
                /// The mount daemon serving the store (running false: it died without unmounting); nil when none.
                let mount: Mount?
                struct Mount: Encodable { let mountpoint: String; let pid: Int32; let running: Bool }
                let pools: [Pool]
                let transfers: [Transfer]
                let conflicts: [Conflict]
                let uploads: [Upload]
                let pinnedToDownload: PinnedToDownload
                struct PinnedToDownload: Encodable { let files: Int; let bytes: UInt64 }
                struct Upload: Encodable {
                    let nodeID: String; let operation: String; let state: String; let queuedAt: Double; let attempts: Int; let lastError: String?
                    let pid: Int32?
                }
                struct Conflict: Encodable { let nodeID: String; let originalID: String; let name: String; let createdAt: Double }
                struct Transfer: Encodable {
                    let pid: Int32; let kind: String; let ownerID: String; let identityID: String?
                    let completedBytes: UInt64; let totalBytes: UInt64; let resumedBytes: UInt64
                    let throughput: Double; let estimatedSecondsRemaining: Double?; let requests: Int
                }
                struct Pool: Encodable {
                    let name: String; let size: UInt64; let persistentSize: UInt64; let cachedSize: UInt64
                    let partialSize: UInt64; let partialDownloads: Int
                    let files: Int; let maxSize: UInt64; let defaultExpiration: Double
                }
            }
            let report = Report(store: manager.location.dataDirectory, cache: manager.location.cacheDirectory,
                                remote: remote.url, remoteIsDefault: remote.isDefault, mount: {
                switch mount {
                case .free: nil
                case .held(let holder): .init(mountpoint: holder.mountpoint, pid: holder.pid, running: true)
                case .abandoned(let holder): .init(mountpoint: holder.mountpoint, pid: holder.pid, running: false)
                }
            }(), pools: pools.map {
                .init(name: $0.pool.rawValue, size: $0.size, persistentSize: $0.persistentSize, cachedSize: $0.cachedSize,
                      partialSize: $0.partialSize, partialDownloads: $0.partialCount, files: $0.fileCount, maxSize: $0.settings.maxSize, defaultExpiration: $0.settings.defaultExpiration)
            }, transfers: boards.flatMap { board in board.transfers.map {
                .init(pid: board.pid, kind: $0.kind.rawValue, ownerID: $0.ownerID, identityID: $0.identityID,
                      completedBytes: $0.completedBytes, totalBytes: $0.totalBytes, resumedBytes: $0.resumedBytes,
                      throughput: $0.throughput, estimatedSecondsRemaining: $0.progress.estimatedTimeRemaining, requests: $0.requests)
            } }, conflicts: conflicts.map {
                .init(nodeID: $0.nodeID.rawValue, originalID: $0.originalID.rawValue, name: $0.name, createdAt: $0.createdAt.timeIntervalSince1970)
            }, uploads: try manager.uploadQueue.all().map {
                .init(nodeID: $0.nodeID.rawValue, operation: $0.operation.rawValue, state: $0.state.rawValue, queuedAt: $0.queuedAt.timeIntervalSince1970,
                      attempts: $0.attempts, lastError: $0.lastError, pid: $0.state == .uploading ? $0.claimedBy : nil)
            }, pinnedToDownload: .init(files: pinnedMissing.count, bytes: pinnedBytes))
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
            return
        }
        print("store \(manager.location.dataDirectory)")
        print("cache \(manager.location.cacheDirectory)")
        print("remote \(remote.url)\(remote.isDefault ? " (the store's own folder: no remote set)" : "")")
        if !remote.isDefault, let state = RemoteHealth.recorded(in: manager) { print("remote state \(state) (as the running mount sees it)") }
        switch mount {
        case .free: print("mounted: no")
        case .held(let holder): print("mounted at \(holder.mountpoint) (daemon PID \(holder.pid))")
        case .abandoned(let holder):
            print("mounted: no; its mount daemon (PID \(holder.pid)) died without unmounting \(holder.mountpoint): 'fusermount3 -u \(holder.mountpoint)', then mount again")
        }
        // ("partial": bytes of downloads cut short, kept to resume, and how many.)
        let header = ["pool", "files", "size", "persistent", "cached", "partial", "max", "expiration"]
        var rows = [header]
        for status in pools {
            let expiration = status.settings.defaultExpiration > 0 ? "\(Int(status.settings.defaultExpiration))s" : "never"
            rows.append([status.pool.rawValue, "\(status.fileCount)", "\(status.size)", "\(status.persistentSize)",
                         "\(status.cachedSize)", status.partialCount > 0 ? "\(status.partialSize) in \(status.partialCount)" : "0",
                         "\(status.settings.maxSize)", expiration])
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            print(row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }.joined(separator: "  "))
        }
        if pools.contains(where: { $0.partialCount > 0 }) {
            print("(partial: bytes of downloads cut short, kept so they resume where they stopped, in that many files)")
        }
        if !pinnedMissing.isEmpty {
            print("pinned, still to download: \(pinnedMissing.count) file\(pinnedMissing.count == 1 ? "" : "s"), \(ProgressBar.bytes(pinnedBytes)) (by the running mount)")
        }
        for board in boards {
            print("downloading (process \(board.pid)):")
            for transfer in board.transfers { print("  " + Self.describe(transfer)) }
        }
        let summary = try manager.uploadQueue.summary(named: 5)
        if summary.total > 0 {
            let parts = [QueuedUpload.State.pending, .uploading, .failed].map { state in
                "\(summary.counts[state] ?? 0) \(state.rawValue) (\(ProgressBar.bytes(summary.bytes[state] ?? 0)))"
            }
            print("upload queue: \(parts.joined(separator: ", "))")
            for (queued, name) in summary.first {
                var line = "  \(name.map { "'\($0)' (node \(queued.nodeID))" } ?? "node \(queued.nodeID)"): \(queued.state.rawValue)"
                switch queued.operation {
                case .content: break
                case .record: line += " (its record: a rename or move)"
                case .delete: line += " (its deletion)"
                }
                if queued.state == .uploading, let pid = queued.claimedBy { line += " (process \(pid))" }
                if let error = queued.lastError { line += " after \(queued.attempts) attempt\(queued.attempts == 1 ? "" : "s"): \(error)" }
                print(line)
            }
            if summary.total > summary.first.count { print("  … and \(summary.total - summary.first.count) more ('darkdisk status --json' lists every one)") }
        }
        if !conflicts.isEmpty {
            print("conflict copies (the remote kept the node; the local change is the copy):")
            for copy in conflicts { print("  node \(copy.nodeID) '\(copy.name)', a copy of node \(copy.originalID)") }
        }
    }

    /// "data of node X: 12.0 MiB of 64.0 MiB (18 %), 16.0 MiB/s, 3 s left".
    static func describe(_ transfer: TransferStatus) -> String {
        let progress = transfer.progress
        var line = "\(transfer.subject): \(ProgressBar.bytes(progress.completedBytes))"
        if progress.totalBytes > 0 {
            line += " of \(ProgressBar.bytes(progress.totalBytes)) (\(Int(progress.fractionCompleted * 100)) %)"
        }
        line += ", \(ProgressBar.bytes(UInt64(progress.throughput)))/s"
        if let left = progress.estimatedTimeRemaining { line += ", \(Int(left.rounded(.up))) s left" }
        return line
    }
}
