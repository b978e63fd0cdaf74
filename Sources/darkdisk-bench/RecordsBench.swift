import DarkDiskStore
import DarkDiskCloud
import DarkDiskSync
import Foundation

/// The bucket `Scripts/bench sync` pulls: `darkdisk-bench records STORE REMOTE-URL PASSPHRASE-FILE N`
/// creates a store at STORE attached to REMOTE-URL (publishing its passphrase-protected key there, as
/// `darkdisk init --remote URL --passphrase-file FILE` does), gives N nodes a 1 KiB data file each, queues
/// them, and uploads the queue through the library's own upload path (`CloudSync.uploadQueued`, what
/// `darkdisk sync` and a mount's daemon run), a few nodes at a time. The bucket then holds N sealed records
/// and N cloud files, exactly as N pushes would leave it, without N processes each unwrapping the key.
enum RecordsBench {
    static func run(_ arguments: [String]) {
        guard arguments.count == 4, let count = Int(arguments[3]), count > 0 else {
            FileHandle.standardError.write(Data("usage: darkdisk-bench records STORE REMOTE-URL PASSPHRASE-FILE COUNT\n".utf8))
            exit(2)
        }
        let outcome = Locked<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        // Detached: the main thread waits below and must not be the one this work needs.
        Task.detached {
            do { try await populate(store: arguments[0], remote: arguments[1], passphraseFile: arguments[2], count: count) } catch {
                outcome.withLock { $0 = error }
            }
            done.signal()
        }
        done.wait()
        if let error = outcome.withLock({ $0 }) {
            FileHandle.standardError.write(Data("darkdisk-bench: \(error)\n".utf8))
            exit(1)
        }
    }

    /// How many uploads run at once.
    static let parallelUploads = 4

    private static func populate(store: String, remote url: String, passphraseFile: String, count: Int) async throws {
        var passphrase = Array(try Data(contentsOf: URL(fileURLWithPath: passphraseFile)))
        if passphrase.last == 0x0A { passphrase.removeLast() }
        let started = Date()
        let (manager, _) = try await StoreRemote.createStore(at: StoreLocation(directory: store), remote: url, passphrase: passphrase)
        let sync = CloudSync(manager: manager, remote: try StoreRemote.remote(for: manager))
        var ids: [NodeID] = []
        ids.reserveCapacity(count)
        for index in 0..<count {
            // Different bytes per node, as real files would be.
            var payload = Data(repeating: UInt8(truncatingIfNeeded: index), count: 1024)
            payload.replaceSubrange(0..<8, with: withUnsafeBytes(of: UInt64(index).littleEndian) { Data($0) })
            var source = DiskImport(cleartextData: payload)
            source.storePersistently = true
            source.migrateToCacheAfterUpload = true
            let id = try NodeID(String(format: "r%07d", index))
            _ = try await manager.importNodeFile(source, nodeID: id)
            try await manager.uploadQueue.add(id, name: String(format: "record %07d.txt", index), parentID: nil)
            ids.append(id)
        }
        let imported = Date()
        let nodeIDs = ids
        let uploaded = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<parallelUploads {
                group.addTask {
                    var done = 0
                    for id in stride(from: worker, to: nodeIDs.count, by: parallelUploads).map({ nodeIDs[$0] }) {
                        guard let result = try await sync.uploadQueued(id), result.conflict == nil else {
                            throw RemoteError(.invalidResponse, "node '\(id)' was not uploaded as itself")
                        }
                        done += 1
                    }
                    return done
                }
            }
            return try await group.reduce(0, +)
        }
        guard uploaded == count, try await manager.uploadQueue.all().isEmpty else {
            throw RemoteError(.invalidResponse, "uploaded \(uploaded) of \(count) nodes; \(try await manager.uploadQueue.all().count) still queued")
        }
        let end = Date()
        let timings = String(format: "imported in %.1f s, uploaded in %.1f s", imported.timeIntervalSince(started), end.timeIntervalSince(imported))
        FileHandle.standardError.write(Data("darkdisk-bench: \(count) records in \(url): \(timings)\n".utf8))
    }
}
