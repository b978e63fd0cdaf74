import DarkDiskCrypto
import DarkDiskStore

/// Where things live in a remote bucket: one small sealed record and a folder of cloud file versions per
/// node, one sealed record per user with an encrypted file per identity avatar (all under names keyed by
/// the master key), and the passphrase-wrapped master key (like gocryptfs' `gocryptfs.conf`).
package enum CloudLayout {
    package static let recordsPrefix = "records/"
    package static let usersPrefix = "users/"
    package static let masterKey = "keys/master.json"

    /// The name a node's objects share in the bucket (`records/<name>.rec`, `nodes/<name>/`): 32 hex digits
    /// keyed by the master key (`DiskManager.objectName`), so the bucket's owner sees no node ID; with
    /// `keyed` false, the node ID itself, as stores named them before (read until the node's next push).
    package static func nodeName(_ nodeID: NodeID, keyed: Bool = true, with manager: DiskManager) -> String {
        keyed ? manager.keys.objectName(["node", nodeID.rawValue]) : nodeID.rawValue
    }

    /// A version of a node's cloud file: `nodes/<name>/<version>.ddc`, written once and never replaced (the
    /// record names the current one); without a version, the first layout's `nodes/<id>.ddc`.
    package static func cloudFile(_ nodeID: NodeID, version: String?, keyed: Bool = true, with manager: DiskManager) -> String {
        guard let version else { return "nodes/\(nodeID.rawValue).ddc" }
        return "nodes/\(nodeName(nodeID, keyed: keyed, with: manager))/\(version).ddc"
    }

    /// The cloud file an outline entry (a record) names.
    package static func cloudFile(of entry: OutlineEntry, with manager: DiskManager) -> String {
        cloudFile(entry.nodeID, version: entry.cloudVersion, keyed: entry.keyedNames, with: manager)
    }

    /// A new version name: 32 random hex digits, so two machines writing at once never pick the same.
    package static func newVersion() -> String {
        Hex.encode(SecureRandom.bytes(16))
    }

    /// Whether a version name (or a keyed name) has the form `newVersion` makes: 32 lower-case hex digits.
    package static func isVersion(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The name of the node folder a cloud-file key is in (either naming), or of the node of a first-layout
    /// `nodes/<id>.ddc`; nil if it is not a cloud-file key.
    package static func nodeName(ofCloudFileKey key: String) -> String? {
        guard key.hasPrefix("nodes/"), key.hasSuffix(".ddc") else { return nil }
        let parts = key.dropFirst(6).dropLast(4).split(separator: "/", omittingEmptySubsequences: false)
        if parts.count == 2, !isVersion(String(parts[1])) { return nil }
        guard parts.count <= 2, let first = parts.first, (try? NodeID(String(first))) != nil else { return nil }
        return String(first)
    }

    /// A node's sealed record (`NodeRecord.sealed`, or the tombstone a delete left), under its keyed name:
    /// what every write makes.
    package static func record(_ nodeID: NodeID, with manager: DiskManager) -> String {
        "records/\(nodeName(nodeID, with: manager)).rec"
    }
    /// A node's sealed record as stores wrote it before keyed names: `records/<id>.rec`. Read while it is a
    /// node's only record; a push writes the keyed one and deletes it.
    package static func recordByID(_ nodeID: NodeID) -> String { "records/\(nodeID.rawValue).rec" }
    /// A node's record in the first layout: plain JSON (refused). A push deletes it.
    package static func legacyRecord(_ nodeID: NodeID) -> String { "records/\(nodeID.rawValue).json" }
    /// A user's sealed record (`UserRecord.sealed`): identities, the display identity, and each identity's
    /// avatar, under a name keyed by the master key (`userName`), so the bucket's owner sees no user ID.
    package static func user(_ userID: UserID, with manager: DiskManager) -> String {
        "users/\(userName(userID, with: manager)).rec"
    }
    /// The keyed name of a user's record.
    package static func userName(_ userID: UserID, with manager: DiskManager) -> String {
        manager.keys.objectName(["user", userID.rawValue])
    }
    /// A user's record as stores before sealing wrote it: plain JSON named by the user ID (refused).
    package static func legacyUser(_ userID: UserID) -> String { "users/\(userID.rawValue).json" }
    /// An identity's avatar (an encrypted file), under a name keyed by the master key.
    package static func avatar(_ userID: UserID, _ identityID: IdentityID, with manager: DiskManager) -> String {
        "avatars/\(manager.keys.objectName(["avatar", userID.rawValue, identityID.rawValue])).ddf"
    }

    /// The name of a key under `records/` (a keyed name or, before keyed names, a node ID) and whether it is
    /// a sealed record (`.rec`; else a plain JSON one, `.json`); nil if it is no record key.
    package static func recordName(ofKey key: String) -> (name: String, sealed: Bool)? {
        guard key.hasPrefix(recordsPrefix) else { return nil }
        let sealed = key.hasSuffix(".rec")
        guard sealed || key.hasSuffix(".json") else { return nil }
        let name = String(key.dropFirst(recordsPrefix.count).dropLast(sealed ? 4 : 5))
        guard (try? NodeID(name)) != nil else { return nil }
        return (name, sealed)
    }

    /// What a key under `users/` is: a sealed user record's keyed name, or the user ID of an unsealed one.
    package static func userRecordName(ofKey key: String) -> (name: String, sealed: Bool)? {
        guard key.hasPrefix(usersPrefix) else { return nil }
        let sealed = key.hasSuffix(".rec")
        guard sealed || key.hasSuffix(".json") else { return nil }
        let name = String(key.dropFirst(usersPrefix.count).dropLast(sealed ? 4 : 5))
        guard !name.isEmpty, !name.contains("/") else { return nil }
        return (name, sealed)
    }
}
