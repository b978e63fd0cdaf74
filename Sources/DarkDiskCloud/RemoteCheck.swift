import DarkDiskStore
import DarkDiskCrypto
import DarkDiskSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What `CloudSync.checkRemote` found: every record and every file it names, authenticated to the end.
public struct RemoteCheckResult: Sendable, Equatable, Codable {
    /// Node and user records read and opened.
    public var records = 0
    /// Cloud files and avatars read to the end, every chunk authenticated.
    public var files = 0
    /// Their bytes.
    public var bytes: UInt64 = 0
    /// Objects under `nodes/` and `avatars/` that no record names, and records a node's keyed record
    /// replaced (left by an interrupted push, say): not problems, listed.
    public var orphans: [String] = []
    /// One line per problem: a record that does not open or is a rollback, a file that is missing, does
    /// not authenticate, or disagrees with its record.
    public var problems: [String] = []

    public var isHealthy: Bool { problems.isEmpty }
}

extension CloudSync {
    /// Authenticates the remote (`check --remote`): every node record must be sealed and
    /// open, be no older than the one this store applied, and name a cloud file that exists with the
    /// record's ETag, whose header authenticates with the node's key and agrees with the record's sizes,
    /// and whose every chunk authenticates; every avatar a user record lists must decrypt. Each file is
    /// fetched into a scratch file of the store (encrypted, as in the bucket) and read there. `progress`
    /// gets the bytes checked of all the files to check. Fails only when the remote cannot be listed or
    /// read; everything else is a line in `problems`.
    public func checkRemote(progress: (@Sendable (DownloadProgress) -> Void)? = nil) async throws -> RemoteCheckResult {
        var result = RemoteCheckResult()
        let records = try await remote.list(prefix: CloudLayout.recordsPrefix)
        // For orphans only: an http remote lists one folder level, so named files are looked up one by one.
        let files = try await remote.list(prefix: "nodes/") + remote.list(prefix: "avatars/")
        var named = Set<String>()
        let appliedGenerations = try await manager.records.generations()
        // What to read: each node's cloud file with its record's key and ETag, each avatar with its key.
        var toRead: [(key: String, fileKey: SymmetricKey, record: OutlineEntry?)] = []
        let known = Set(try await manager.outline.entries().map(\.nodeID)).union(appliedGenerations.keys)
        let listing = try await RecordListing.read(records, knownNodes: known, with: manager) { object throws(RemoteError) in
            try await remote.readAll(object.key)
        }
        for listed in listing.entries {
            result.records += 1
            var entry: OutlineEntry
            let key: SymmetricKey
            do {
                let opened = try listed.opened.get()
                let nodeID = opened.nodeID
                let read = opened.object
                if case .tombstone(let note) = read, note.moved == true {
                    throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' moved to its keyed name, which \(remote.url) does not hold")
                }
                let applied = appliedGenerations[nodeID] ?? 0
                guard read.generation >= applied else {
                    throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' is older (generation \(read.generation)) than the one this store has applied (generation \(applied)): a rollback")
                }
                // A deleted node's tombstone names no file: its versions are orphans until `gc`.
                guard let record = read.record else { continue }
                entry = try record.outlineEntry()
                // A record from before file IDs: the one this store bound to that version, if it did.
                if entry.cloudFileID == nil {
                    entry.cloudFileID = OutlineEntry.boundFileID(of: entry.cloudVersion, known: try await manager.outline.entry(nodeID))
                }
                key = try manager.keys.unwrap(entry.wrappedKey, for: .node(entry.nodeID))
            } catch let error as any DarkDiskFailure {
                result.problems.append(error.message)
                continue
            }
            let cloudKey = CloudLayout.cloudFile(of: entry, with: manager)
            named.insert(cloudKey)
            toRead.append((cloudKey, key, entry))
        }
        // A record under a node's ID that its keyed record replaced (a push cut short left it) is no problem:
        // `gc` deletes it, counted with the orphans. One of the same or a higher generation is a change made
        // there while the node moved, which the keyed record shadows: a problem.
        let chosen = Set(listing.entries.map(\.key))
        var shadowing = Set<String>()
        for beside in try await listing.recordsBesideKeyed(in: records, remote: remote, with: manager) where !beside.isReplaced {
            guard let held = beside.held else { continue }
            shadowing.insert(beside.object.key)
            result.problems.append("node '\(beside.nodeID)' has a record under its ID at generation \(held.generation) beside its keyed record at generation \(beside.keyedGeneration): a change made there while the node moved is shadowed (push the node again to keep it)")
        }
        let replaced = records.map(\.key).filter { !chosen.contains($0) && !shadowing.contains($0) && CloudLayout.recordName(ofKey: $0) != nil }
        // A sealed record this store applied that is simply gone: a delete would have left a tombstone.
        let listed = Set(listing.entries.compactMap(\.nodeID))
        for entry in try await manager.outline.entries() where !listed.contains(entry.nodeID) {
            let applied = appliedGenerations[entry.nodeID] ?? 0
            if applied > 0 {
                result.problems.append("the record of node '\(entry.nodeID)' is gone from \(remote.url) without a tombstone (this store applied generation \(applied))")
            }
        }
        for object in try await remote.list(prefix: CloudLayout.usersPrefix) {
            guard let name = CloudLayout.userRecordName(ofKey: object.key) else { continue }
            result.records += 1
            guard name.sealed else {
                result.problems.append("the user record \(object.key) is unsealed (plain JSON): anyone with access to the bucket could have written it")
                continue
            }
            guard let data = try await remote.readAll(object.key) else { continue }
            do {
                let record = try UserRecord.open(data, name: name.name, with: manager)
                let userID = try UserID(record.userID)
                for identity in record.identities {
                    guard let avatar = identity.avatar else { continue }
                    guard let identityID = try? IdentityID(identity.identityID), let wrapped = Hex.decode(avatar.wrappedKey) else {
                        throw RemoteError(.invalidResponse, "the record of user '\(userID)' lists a malformed identity or key")
                    }
                    let avatarKey = CloudLayout.avatar(userID, identityID, with: manager)
                    named.insert(avatarKey)
                    toRead.append((avatarKey, try manager.keys.unwrap(wrapped, for: .avatar(userID, identityID)), nil))
                }
            } catch let error as any DarkDiskFailure {
                result.problems.append(error.message)
            }
        }
        result.orphans = (files.map(\.key).filter { !named.contains($0) } + replaced).sorted()

        var sizes: [String: UInt64] = [:]
        for item in toRead { sizes[item.key] = try await remote.info(item.key)?.size }
        let total = sizes.values.reduce(0, +)
        let started = Date()
        for item in toRead {
            guard let size = sizes[item.key] else {
                result.problems.append("\(item.key) is named by a record but is not in \(remote.url)")
                continue
            }
            do {
                try await authenticate(item.key, size: size, key: item.fileKey, record: item.record)
                result.files += 1
            } catch let error as RemoteError where error.code == .unreachable {
                throw error
            } catch let error as any DarkDiskFailure {
                result.problems.append(error.message)
            }
            result.bytes += size
            let elapsed = max(Date().timeIntervalSince(started), 0.001)
            progress?(DownloadProgress(completedBytes: result.bytes, totalBytes: total, resumedBytes: 0, throughput: Double(result.bytes) / elapsed))
        }
        return result
    }

    /// Fetches one file into a scratch file and reads it to the end: its header must authenticate and agree
    /// with `record` (its sizes, and the file ID the record names: not the ETag, which any server can report
    /// and which a faithful copy of a bucket changes), and every chunk of every section too.
    private func authenticate(_ objectKey: String, size: UInt64, key: SymmetricKey, record: OutlineEntry?) async throws {
        let scratch = try await manager.makeScratchFile()
        let file: OwnedDescriptor
        do { file = try OwnedDescriptor.open(scratch.path, O_WRONLY | O_TRUNC) } catch {
            throw RemoteError(.io, "cannot open \(scratch.path): \(error)")
        }
        let written = WriteOffset()
        let path = scratch.path
        let fetched: Result<Void, RemoteError>
        do {
            try await remote.read(objectKey, range: 0..<size, ifMatch: nil) { (bytes: UnsafeRawBufferPointer) throws(RemoteError) in
                guard let base = bytes.baseAddress, bytes.count > 0 else { return }
                do { try file.pwrite(from: base, count: bytes.count, at: written.value) } catch {
                    throw RemoteError(.io, "cannot write \(path): \(error)")
                }
                written.value += UInt64(bytes.count)
            }
            fetched = .success(())
        } catch {
            fetched = .failure(error)
        }
        if case .failure(let error) = fetched { throw error }
        do {
            // A cloud file's padding is cut off before the file is read; an object of any other length than
            // the cloud file's or its padded one is refused.
            let header = try DownloadManager.cutPadding(path, key: key, name: objectKey).header
            if header.format == .cloudFile, !CloudFilePadding.accepts(objectSize: size, fileLength: header.fileLength) {
                throw RemoteError(.invalidResponse, "\(objectKey) is \(size) bytes, neither the \(header.fileLength) its header describes nor their padded length")
            }
            let reader = try CryptoFileReader(path: scratch.path, key: key)
            if let record { try record.checkAgreement(with: reader.header, objectKey: objectKey) }
            try reader.authenticateAll()
        } catch let error as CryptoError {
            throw RemoteError(.invalidResponse, "\(objectKey) does not authenticate: \(error.message)")
        }
        withExtendedLifetime(scratch) {}
    }
}

/// Where the next fetched bytes of a checked file go.
private final class WriteOffset {
    var value: UInt64 = 0
}
