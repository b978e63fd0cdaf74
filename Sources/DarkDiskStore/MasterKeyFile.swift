import DarkDiskCrypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The store's master key on disk: a random key in a `0600` JSON file, either in the clear (`kdf: none`)
/// or wrapped by a key derived from a passphrase with scrypt (as gocryptfs keeps `gocryptfs.conf`).
package enum MasterKeyFile {
    /// The fewest characters a new passphrase may have.
    package static let minimumPassphraseLength = 8
    package static let scryptR: UInt64 = 8
    package static let scryptP: UInt64 = 1

    struct Contents: Codable {
        var version: Int
        var kdf: String
        var key: String?
        var n: UInt64?
        var r: UInt64?
        var p: UInt64?
        var salt: String?
        var wrappedKey: String?
    }

    /// Creates a new random master key at `path` (failing if one exists) and returns it.
    package static func create(at path: String, passphrase: [UInt8]?, cost: PassphraseCost = .standard) throws(DarkDiskError) -> SymmetricKey {
        let key = SymmetricKey.random()
        try FileOperations.writeNewFile(path, contents: try encoded(key, passphrase: passphrase, cost: cost), mode: 0o600)
        return key
    }

    /// A key file's bytes: `key` in the clear, or wrapped by a key derived from `passphrase` at `cost` (a
    /// fresh salt).
    private static func encoded(_ key: SymmetricKey, passphrase: [UInt8]?, cost: PassphraseCost) throws(DarkDiskError) -> Data {
        var contents = Contents(version: 1, kdf: "none")
        if let passphrase {
            guard String(decoding: passphrase, as: UTF8.self).count >= minimumPassphraseLength else {
                throw DarkDiskError(.invalidArgument, "a passphrase needs at least \(minimumPassphraseLength) characters (this one has \(String(decoding: passphrase, as: UTF8.self).count))")
            }
            let salt = SecureRandom.bytes(32)
            let kek: SymmetricKey
            do {
                kek = try Scrypt.deriveKey(passphrase: passphrase, salt: salt, n: cost.n, r: scryptR, p: scryptP)
            } catch {
                throw DarkDiskError(.keyFile, "cannot derive a key from the passphrase: \(error)")
            }
            contents.kdf = "scrypt"
            contents.n = cost.n
            contents.r = scryptR
            contents.p = scryptP
            contents.salt = Hex.encode(salt)
            contents.wrappedKey = Hex.encode(kek.wrap(key))
        } else {
            contents.key = Hex.encode(key.bytes)
        }
        do { return try JSONEncoder().encode(contents) + Data("\n".utf8) } catch {
            throw DarkDiskError(.keyFile, "cannot encode key file: \(error)")
        }
    }

    /// The key inside a passphrase-protected key file made elsewhere (another machine's, from the remote).
    package static func unwrap(_ contents: Data, passphrase: [UInt8]) throws(DarkDiskError) -> SymmetricKey {
        guard let parsed = try? JSONDecoder().decode(Contents.self, from: contents), parsed.version == 1, parsed.kdf == "scrypt",
              let n = parsed.n, let r = parsed.r, let p = parsed.p,
              let salt = parsed.salt.flatMap(Hex.decode), let wrapped = parsed.wrappedKey.flatMap(Hex.decode) else {
            throw DarkDiskError(.keyFile, "the remote's key file is malformed")
        }
        guard n <= PassphraseCost.strongest.n, r <= 32, p <= 16 else { throw DarkDiskError(.keyFile, "the remote's key file asks for unreasonable scrypt parameters") }
        do {
            return try Scrypt.deriveKey(passphrase: passphrase, salt: salt, n: n, r: r, p: p).unwrap(wrapped)
        } catch {
            throw DarkDiskError(.wrongPassphrase, "wrong passphrase for the remote's key")
        }
    }

    /// Replaces the key file at `path` with `key` wrapped by a new `passphrase` at `cost` (a fresh salt),
    /// atomically: a crash leaves the old file or the new one.
    package static func rewrap(_ key: SymmetricKey, passphrase: [UInt8], cost: PassphraseCost = .standard, at path: String) throws(DarkDiskError) {
        let contents = try encoded(key, passphrase: passphrase, cost: cost)
        let temporary = path + ".new"
        unlink(temporary)
        try FileOperations.writeNewFile(temporary, contents: contents, mode: 0o600)
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw .posix("cannot replace", path: path)
        }
        try FileOperations.syncDirectory(of: path)
    }

    /// Installs a passphrase-protected key file made elsewhere (another machine's, from the remote) at `path`,
    /// after checking that `passphrase` unlocks it; returns the key.
    package static func adopt(_ contents: Data, at path: String, passphrase: [UInt8]) throws(DarkDiskError) -> SymmetricKey {
        let key = try unwrap(contents, passphrase: passphrase)
        try FileOperations.writeNewFile(path, contents: contents, mode: 0o600)
        return key
    }

    /// The key file's bytes, to publish a passphrase-protected key to a remote.
    package static func contents(at path: String) throws(DarkDiskError) -> Data {
        try FileOperations.readPrivateFile(path, what: "key file")
    }

    /// Whether the key file at `path` needs a passphrase.
    package static func needsPassphrase(at path: String) throws(DarkDiskError) -> Bool {
        try read(at: path).kdf != "none"
    }

    /// Loads the master key, refusing a key file that group or others can access.
    package static func load(at path: String, passphrase: [UInt8]?) throws(DarkDiskError) -> SymmetricKey {
        let contents = try read(at: path)
        switch contents.kdf {
        case "none":
            guard let hex = contents.key, var bytes = Hex.decode(hex) else {
                throw DarkDiskError(.keyFile, "key file \(path) is malformed")
            }
            defer { wipe(&bytes) }
            guard let key = try? SymmetricKey(bytes: bytes) else { throw DarkDiskError(.keyFile, "key file \(path) is malformed") }
            return key
        case "scrypt":
            guard let passphrase else {
                throw DarkDiskError(.passphraseRequired, "the store's key is protected by a passphrase; none was given")
            }
            guard let n = contents.n, let r = contents.r, let p = contents.p,
                  let salt = contents.salt.flatMap(Hex.decode), let wrapped = contents.wrappedKey.flatMap(Hex.decode) else {
                throw DarkDiskError(.keyFile, "key file \(path) is malformed")
            }
            let kek: SymmetricKey
            do {
                kek = try Scrypt.deriveKey(passphrase: passphrase, salt: salt, n: n, r: r, p: p)
            } catch {
                throw DarkDiskError(.keyFile, "key file \(path) has unusable scrypt parameters: \(error)")
            }
            do {
                return try kek.unwrap(wrapped)
            } catch {
                throw DarkDiskError(.wrongPassphrase, "wrong passphrase for key file \(path)")
            }
        default:
            throw DarkDiskError(.keyFile, "key file \(path) uses an unknown key derivation '\(ValidatedID.printable(contents.kdf))'")
        }
    }

    private static func read(at path: String) throws(DarkDiskError) -> Contents {
        let data = try FileOperations.readPrivateFile(path, what: "key file")
        guard let contents = try? JSONDecoder().decode(Contents.self, from: data), contents.version == 1 else {
            throw DarkDiskError(.keyFile, "key file \(path) is malformed or of an unknown version")
        }
        return contents
    }
}

/// How hard a passphrase is to guess by brute force: scrypt's cost N as a power of two (r = 8, p = 1).
/// New key files use `standard`, N = 2^17 (OWASP's minimum for scrypt; 128 MiB and about half a second
/// per unlock); a key file records its cost, so older files keep theirs until `passphrase set` rewraps them.
public struct PassphraseCost: Sendable, Hashable, CustomStringConvertible {
    /// log2 of scrypt's N.
    public let logN: Int

    /// The default for new key files: N = 2^17.
    public static let standard = PassphraseCost(checkedLogN: 17)
    /// The cheapest cost accepted (N = 2^10: for tests and very weak machines, not for secrets).
    public static let weakest = PassphraseCost(checkedLogN: 10)
    /// The most expensive cost accepted (N = 2^20: 1 GiB of memory per unlock).
    public static let strongest = PassphraseCost(checkedLogN: 20)

    /// The cost N = 2^`logN`; outside `weakest`…`strongest` is `.invalidArgument`.
    public init(logN: Int) throws(DarkDiskError) {
        guard (Self.weakest.logN...Self.strongest.logN).contains(logN) else {
            throw DarkDiskError(.invalidArgument, "the scrypt cost must be \(Self.weakest.logN) to \(Self.strongest.logN) (log2 of N), not \(logN)")
        }
        self.logN = logN
    }

    private init(checkedLogN: Int) { logN = checkedLogN }

    /// scrypt's N.
    public var n: UInt64 { 1 << UInt64(logN) }

    public var description: String { "N=2^\(logN)" }
}
