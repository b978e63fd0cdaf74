import DarkDiskCrypto
import DarkDiskSystem
import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

extension DiskManager {
    /// Checks that the index and the disk agree: every indexed file is there (or, in the cache pool, gone
    /// as a purge leaves it) with its recorded size and an authentic header, and the pools' running totals
    /// equal the sum of their rows. `full` also reads every file to the end, authenticating each chunk.
    /// Meant for a quiet store (`darkdisk check`, and the fault tests after each crash): files being
    /// imported meanwhile may show up as orphans.
    public func check(full: Bool = false) throws(DarkDiskError) -> StoreCheck {
        let (records, usage, pending) = try read { db in
            (try FileRecord.fetchAll(db),
             try Row.fetchAll(db, sql: "SELECT pool, mode, bytes, files FROM usage"),
             Set(try String.fetchAll(db, sql: "SELECT path FROM pendingDelete")))
        }
        var result = StoreCheck()
        var names = Set<String>()
        for record in records {
            result.files += 1
            names.insert(record.name)
            var problem = checkFile(record, full: full, &result)
            // A running mount moves, replaces and deletes files as it uploads and evicts: a problem is one
            // only if the index still says what it said (else the row as it is now is checked), so a check
            // beside a busy mount never reports what does not exist.
            if problem != nil, let id = record.id {
                let now = try read { db in try FileRecord.fetchOne(db, key: id) }
                if let now, (now.name, now.mode, now.storedSize) != (record.name, record.mode, record.storedSize) {
                    names.insert(now.name)
                    problem = checkFile(now, full: full, &result)
                } else if now == nil {
                    problem = nil
                }
            }
            if let problem { result.problems.append(problem) }
        }
        var unnamed: [(name: String, mode: StorageMode)] = []
        for (root, mode) in [(location.persistentFiles, StorageMode.persistent), (location.cacheFiles, .cache)] {
            for shard in FileOperations.realDirectoryEntries(root) ?? [] {
                for name in FileOperations.realDirectoryEntries(root + "/" + shard) ?? [] where !names.contains(name) {
                    if !pending.contains(root + "/" + shard + "/" + name) { unnamed.append((name, mode)) }
                }
            }
        }
        // (Made since the index was read, or journaled by a running mount: not debris.)
        if !unnamed.isEmpty {
            let journaled = journaledFileNames() ?? []
            for file in unnamed where !journaled.contains(file.name) {
                let indexed = try read { db in
                    try Bool.fetchOne(db, sql: "SELECT 1 FROM file WHERE name = ? AND mode = ?", arguments: [file.name, file.mode.rawValue])
                }
                if indexed != true { result.orphans += 1 }
            }
        }
        for staging in [location.persistentStaging, location.cacheStaging] {
            for name in FileOperations.realDirectoryEntries(staging) ?? [] {
                let path = staging + "/" + name
                // One an import is writing holds its lock: not debris.
                guard let file = try? OwnedDescriptor.open(path, O_RDONLY | O_NOFOLLOW), let st = try? file.stat(),
                      st.st_mode & S_IFMT == S_IFREG, (try? file.tryLock(.exclusive)) == true else { continue }
                result.stagingFiles += 1
                result.stagingBytes += UInt64(st.st_size)
            }
        }
        for row in usage {
            let pool: String = row["pool"], mode: String = row["mode"]
            let rows = records.filter { $0.pool.rawValue == pool && $0.mode.rawValue == mode }
            let bytes = rows.reduce(Int64(0)) { $0 + $1.storedSize }
            let (recordedBytes, recordedFiles): (Int64, Int64) = (row["bytes"], row["files"])
            if recordedBytes != bytes || recordedFiles != Int64(rows.count) {
                result.problems.append("pool \(pool) (\(mode)): the running total says \(recordedFiles) files, \(recordedBytes) bytes; the rows add up to \(rows.count) files, \(bytes) bytes")
            }
        }
        return result
    }

    /// What is wrong with the stored file of `record`, if anything (`full`: every chunk authenticated).
    private func checkFile(_ record: FileRecord, full: Bool, _ result: inout StoreCheck) -> String? {
        let path = files.path(of: record)
        let what = "\(record.kind.rawValue) of '\(record.ownerID)'\(record.identityID.isEmpty ? "" : " / '\(record.identityID)'") (\(record.mode.rawValue))"
        var st = stat()
        guard lstat(path, &st) == 0 else {
            if record.mode == .cache, errno == ENOENT {
                result.vanishedCacheFiles += 1
                return nil
            }
            return "\(what): \(path) is missing"
        }
        guard st.st_mode & S_IFMT == S_IFREG else { return "\(what): \(path) is not a regular file" }
        guard Int64(st.st_size) == record.storedSize else {
            return "\(what): \(path) has \(st.st_size) bytes, the index says \(record.storedSize)"
        }
        do {
            let reader = try CryptoFileReader(path: path, key: try unwrap(record.wrappedKey))
            if full {
                try reader.authenticateAll()
                result.authenticated += 1
            }
        } catch {
            return "\(what): \(path) does not authenticate: \(error)"
        }
        return nil
    }
}
