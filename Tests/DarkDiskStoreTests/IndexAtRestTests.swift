import DarkDiskStore
import DarkDiskCrypto
import DarkDiskTestSupport
import Foundation
import Testing

/// The index of a store with a passphrase holds no name, link target or extended attribute in the clear:
/// every page of it and of its WAL is encrypted at rest. An index written before is encrypted the next time
/// a process has the store alone, and reads as before.
@Suite struct IndexAtRestTests {
    /// Every byte of the index's files (the database, its WAL, its shared memory).
    static func indexBytes(_ store: TemporaryStore) throws -> Data {
        var all = Data()
        for suffix in ["", "-wal", "-shm"] {
            if let data = FileManager.default.contents(atPath: store.location.indexPath + suffix) { all.append(data) }
        }
        return all
    }

    /// A folder, a file, a link and an extended attribute, with names nobody else would use.
    static func makeSecrets(in manager: DiskManager) throws -> NodeID {
        let folder = try manager.createDriveNode(named: "folder-wombat-7", in: nil, attributes: NodeAttributes(kind: .folder, mode: 0o700))
        let (file, content) = try manager.createDriveFile(named: "tax-return-aardvark.pdf", in: folder.id,
                                                          attributes: NodeAttributes(kind: .file, mode: 0o600, extendedAttributes: ["user.note": Array("quokka-note".utf8)]))
        try Data("contents".utf8).withUnsafeBytes { try content.write(offset: 0, bytes: $0) }
        try manager.commitDriveFile(file.id, content: content)
        _ = try manager.createDriveNode(named: "link-numbat", in: folder.id, attributes: NodeAttributes(kind: .symlink, target: "/home/echidna-target"))
        manager.drainDriveCommits()
        return folder.id
    }

    /// (The index keeps extended attributes' values in base64.)
    static let secrets = ["folder-wombat-7", "tax-return-aardvark", Data("quokka-note".utf8).base64EncodedString().replacingOccurrences(of: "=", with: ""),
                          "link-numbat", "echidna-target"]

    static func clearSecrets(_ store: TemporaryStore) throws -> [String] {
        let bytes = try indexBytes(store)
        return secrets.filter { bytes.range(of: Data($0.utf8)) != nil }
    }

    @Test func aStoreWithAPassphraseKeepsNoNameInTheClear() throws {
        // Without a passphrase, the names are in the index as they are (the key file is beside it): what the
        // search below finds when it is there to find.
        let plain = try TemporaryStore()
        do {
            let manager = try plain.create()
            _ = try Self.makeSecrets(in: manager)
            #expect(try Self.clearSecrets(plain) == Self.secrets)
        }

        let store = try TemporaryStore()
        let folder: NodeID
        do {
            let manager = try store.create(passphrase: "correct horse battery")
            folder = try Self.makeSecrets(in: manager)
            #expect(try Self.clearSecrets(store).isEmpty, "in the database or its WAL while open")
            #expect(!FileManager.default.contents(atPath: store.location.indexPath)!.starts(with: Data("SQLite format 3".utf8)))
        }
        #expect(try Self.clearSecrets(store).isEmpty, "after it closed")
        let reopened = try store.open(passphrase: "correct horse battery")
        #expect(try reopened.driveChildren(of: folder).map(\.name).sorted() == ["link-numbat", "tax-return-aardvark.pdf"])
        #expect(try reopened.driveChildren(of: nil, named: "folder-wombat-7").map(\.id) == [folder])
        #expect(try reopened.check().isHealthy)
    }

    /// A store given a passphrase keeps its index in the clear while another process (here: another
    /// opening) has it open, and encrypts it at the next opening that has it alone.
    @Test func anIndexWrittenBeforeIsEncryptedWhenTheStoreIsOpenedAlone() throws {
        let store = try TemporaryStore()
        let folder: NodeID
        do {
            let manager = try store.create()
            folder = try Self.makeSecrets(in: manager)
            try manager.setPassphrase(Array("correct horse battery".utf8), cost: .weakest)
        }
        #expect(try Self.clearSecrets(store) == Self.secrets)
        do {
            let first = try store.open(passphrase: "correct horse battery")
            #expect(try Self.clearSecrets(store).isEmpty, "encrypted at the first opening alone")
            let second = try store.open(passphrase: "correct horse battery")
            #expect(try second.driveChildren(of: folder).count == 2 && first.driveChildren(of: folder).count == 2)
        }

        let shared = try TemporaryStore()
        let kept = try shared.create()
        let sharedFolder = try Self.makeSecrets(in: kept)
        try kept.setPassphrase(Array("correct horse battery".utf8), cost: .weakest)
        do {
            let other = try shared.open(passphrase: "correct horse battery")
            #expect(try other.driveChildren(of: sharedFolder).count == 2, "read as it is")
            #expect(try Self.clearSecrets(shared) == Self.secrets, "not while another opening has it")
        }
        withExtendedLifetime(kept) {}
    }

    /// The index is what Docs/FORMAT.md says ("The index at rest"): decrypted by Python's `cryptography`
    /// from the document alone (AES-256-XTS, the key from HKDF of the master key, unit `i`'s tweak `i` and
    /// 0x01), page 1 is SQLite's and the names are in the pages.
    @Test func theIndexIsTheDocumentedXTS() throws {
        let store = try TemporaryStore()
        do {
            let manager = try store.create(passphrase: "correct horse battery")
            _ = try Self.makeSecrets(in: manager)
        }
        let master = try MasterKeyFile.load(at: store.location.keyPath, passphrase: Array("correct horse battery".utf8))
        let key = try master.derived(for: "darkdisk index key v1 (data)").bytes + master.derived(for: "darkdisk index key v1 (tweak)").bytes
        let script = """
            import sys
            from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
            key, path = bytes.fromhex(sys.argv[1]), sys.argv[2]
            data = open(path, "rb").read()
            plain = b""
            for i in range(len(data) // 4096):
                tweak = i.to_bytes(8, "little") + bytes([1]) + bytes(7)
                plain += Cipher(algorithms.AES(key), modes.XTS(tweak)).decryptor().update(data[i * 4096:(i + 1) * 4096])
            sys.stdout.buffer.write(plain)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script, Hex.encode(key), store.location.indexPath]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let plain = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(plain.starts(with: Data("SQLite format 3\u{0}".utf8)), "page 1 is SQLite's")
        #expect(!FileManager.default.fileExists(atPath: store.location.indexPath + "-wal"), "checkpointed into the database at the close")
        for secret in Self.secrets {
            #expect(plain.range(of: Data(secret.utf8)) != nil, "\(secret) is in the decrypted pages")
        }
    }
}
