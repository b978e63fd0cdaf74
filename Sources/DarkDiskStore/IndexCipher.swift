import CIndexCipher
import DarkDiskCrypto
import DarkDiskSystem
import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

/// The index of a store with a passphrase, encrypted at rest: names, link targets, extended attributes,
/// sizes and times are in it, and the passphrase should protect them as it protects contents. Every page of
/// the database, its WAL and its journal goes through an SQLite VFS (`CIndexCipher`) that encrypts it with
/// AES-256-XTS under a key derived from the master key, as disk encryption does (confidentiality at rest;
/// the files are this machine's own). A store without a passphrase keeps a plaintext index: its key file
/// is beside it, so encrypting would hide nothing.
///
/// An index written before (plaintext, under a passphrase) is read as it is, and encrypted the next time
/// a darkdisk process opens the store alone (`encryptIfAlone`): every process holds a shared `flock` on
/// `index.sqlite.lock` while the store is open, so an exclusive one means nobody else has the index open.
struct IndexCipher: Sendable {
    /// The two AES-256 keys of XTS.
    private let key: [UInt8]

    /// The key for a store's index, derived from its master key.
    init(masterKey: SymmetricKey) throws(DarkDiskError) {
        do {
            key = try masterKey.derived(for: "darkdisk index key v1 (data)").bytes + masterKey.derived(for: "darkdisk index key v1 (tweak)").bytes
        } catch {
            throw DarkDiskError(.corrupt, "cannot derive the index key: \(error)")
        }
        guard Self.installed else { throw DarkDiskError(.database, "cannot install the index's encrypting SQLite VFS") }
    }

    /// The VFS, installed once per process as SQLite's default (databases nobody registered pass through).
    private static let installed = darkdisk_index_cipher_install() == 0

    /// Encrypts the database at `path` (its WAL and journal too) in this process from now on.
    func register(_ path: String) throws(DarkDiskError) {
        let status = key.withUnsafeBufferPointer { darkdisk_index_cipher_register(Self.canonical(path), $0.baseAddress) }
        guard status == 0 else { throw DarkDiskError(.database, "cannot register the index \(path) for encryption") }
    }

    /// Whether the database at `path` was opened through the VFS as registered (SQLite named it as
    /// `canonical` does): a registered index that was not would be written in the clear.
    func wasOpened(_ path: String) -> Bool {
        darkdisk_index_cipher_mode(Self.canonical(path)) != 0
    }

    /// `path` as SQLite names the file it opens: its folder resolved (links and all), then its name.
    static func canonical(_ path: String) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        guard let resolved = realpath(folder.isEmpty ? "." : folder, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved) + "/" + (path as NSString).lastPathComponent
    }

    /// Whether the database file at `path` is an SQLite database in the clear (an index written before
    /// encryption, or a store without a passphrase). False for a missing or empty file.
    static func isPlaintext(_ path: String) -> Bool {
        darkdisk_index_cipher_is_plain(path) != 0
    }

    /// The shared lock every process holds on a store while its index is open (`index.sqlite.lock`).
    final class OpenLock: Sendable {
        let path: String
        /// The lock file, holding the shared lock while this lives.
        let file: OwnedDescriptor

        init(indexPath: String) throws(DarkDiskError) {
            path = indexPath + ".lock"
            do {
                file = try OwnedDescriptor.open(path, O_RDWR | O_CREAT, mode: 0o600)
            } catch {
                throw DarkDiskError(.io, "cannot open \(path): \(error)")
            }
            do { try file.lock(.shared) } catch {
                throw DarkDiskError(.io, "cannot lock \(path): \(error)", errno: error.rawValue)
            }
        }

        /// Runs `body` if no other process holds the lock (this one's is exclusive meanwhile); false if one does.
        /// (Linux converts a lock by dropping it first: a failed conversion takes the shared one again.)
        func ifAlone(_ body: () throws(DarkDiskError) -> Void) throws(DarkDiskError) -> Bool {
            // (A conversion that fails for another reason counts as a holder's: encrypting waits for an opening.)
            guard (try? file.tryLock(.exclusive)) == true else {
                try takeSharedAgain()
                return false
            }
            do { try body() } catch {
                try? file.lock(.shared)  // (the body's failure is the one to report)
                throw error
            }
            try takeSharedAgain()
            return true
        }

        /// Takes the shared lock back after an exclusive one, or after a failed conversion to it.
        private func takeSharedAgain() throws(DarkDiskError) {
            do { try file.lock(.shared) } catch {
                throw DarkDiskError(.io, "cannot lock \(path) again: \(error)", errno: error.rawValue)
            }
        }
    }

    /// Encrypts the plaintext index at `path` if no other process has the store open (`lock`, and SQLite's
    /// own lock on the index's shared memory, which a darkdisk from before this lock holds too): copied
    /// whole into an encrypted file (`VACUUM INTO`), which then takes its place. Nothing of this process may
    /// have the index open. True if it did.
    func encryptIfAlone(_ path: String, lock: OpenLock) throws(DarkDiskError) -> Bool {
        guard Self.isPlaintext(path) else { return false }
        return try lock.ifAlone { () throws(DarkDiskError) in
            guard !Self.sqliteHasItOpen(path) else { return }
            let temporary = path + ".encrypting"
            unlink(temporary)
            try register(temporary)
            defer { darkdisk_index_cipher_forget(Self.canonical(temporary)) }
            do {
                var config = Configuration()
                config.busyMode = .timeout(10)
                let plain = try DatabaseQueue(path: path, configuration: config)
                try plain.writeWithoutTransaction { db in
                    try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                    try db.execute(sql: "VACUUM INTO ?", arguments: [temporary])
                }
                try plain.close()
            } catch {
                unlink(temporary)
                throw IndexDatabase.failure(error, doing: "cannot encrypt the index \(path)")
            }
            // (Best effort, as a checkpoint's flush is: the rename below is what must not fail.)
            try? OwnedDescriptor.open(temporary, O_RDONLY).fsync()
            // The plaintext WAL (emptied by the checkpoint) must not meet the new file.
            unlink(path + "-wal")
            unlink(path + "-shm")
            guard rename(temporary, path) == 0 else {
                let code = errno
                unlink(temporary)
                throw DarkDiskError(.io, "cannot put the encrypted index in place of \(path): \(String(cString: strerror(code)))")
            }
            try? OwnedDescriptor.open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY).fsync()
        } && !Self.isPlaintext(path)
    }

    /// Whether an SQLite connection of another process has the database at `path` open in WAL mode: each
    /// holds a read lock on the "dead man switch" byte of its shared memory (byte 128 of `path-shm`).
    static func sqliteHasItOpen(_ path: String) -> Bool {
        guard let shm = try? OwnedDescriptor.open(path + "-shm", O_RDWR) else { return false }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 128
        lock.l_len = 1
        return fcntl(shm.rawValue, F_GETLK, &lock) == 0 && lock.l_type != Int16(F_UNLCK)
    }
}

extension DiskManager {
    /// Whether the store's index is encrypted at rest (a store with a passphrase, once opened alone).
    package var isIndexEncrypted: Bool {
        FileManager.default.fileExists(atPath: location.indexPath) && !IndexCipher.isPlaintext(location.indexPath)
    }
}
