import DarkDiskCrypto
import DarkDisk

/// Where things live in a remote bucket: one cloud file and one small sealed record per node, one sealed
/// record per user with an encrypted file per identity avatar (both under keyed names), and the
/// passphrase-wrapped master key (like gocryptfs' `gocryptfs.conf`).
public enum CloudLayout {
    public static let recordsPrefix = "records/"
    public static let usersPrefix = "users/"
    public static let masterKey = "keys/master.json"

    /// A version of a node's cloud file: `nodes/<id>/<version>.ddc`, written once and never replaced (the
    /// record names the current one); without a version, the first layout's `nodes/<id>.ddc`.
    public static func cloudFile(_ nodeID: NodeID, version: String?) -> String {
        version.map { "nodes/\(nodeID.rawValue)/\($0).ddc" } ?? "nodes/\(nodeID.rawValue).ddc"
    }

    /// The cloud file an outline entry (a record) names.
    public static func cloudFile(of entry: OutlineEntry) -> String {
        cloudFile(entry.nodeID, version: entry.cloudVersion)
    }

    /// A new version name: 32 random hex digits, so two machines writing at once never pick the same.
    public static func newVersion() -> String {
        Hex.encode(SecureRandom.bytes(16))
    }

    /// Whether a version name has the form `newVersion` makes.
    public static func isVersion(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The node a cloud-file key belongs to (either layout), if it is one.
    public static func nodeID(ofCloudFileKey key: String) -> NodeID? {
        guard key.hasPrefix("nodes/"), key.hasSuffix(".ddc") else { return nil }
        let parts = key.dropFirst(6).dropLast(4).split(separator: "/", omittingEmptySubsequences: false)
        if parts.count == 2, !isVersion(String(parts[1])) { return nil }
        guard parts.count <= 2, let first = parts.first else { return nil }
        return try? NodeID(String(first))
    }
    /// A node's sealed record (`NodeRecord.sealed`), what every write makes.
    public static func record(_ nodeID: NodeID) -> String { "records/\(nodeID.rawValue).rec" }
    /// A node's record in the first layout: plain JSON. Read when no sealed record exists; a push replaces it.
    public static func legacyRecord(_ nodeID: NodeID) -> String { "records/\(nodeID.rawValue).json" }
    /// A user's sealed record (`UserRecord.sealed`): identities, the display identity, and each identity's
    /// avatar, under a name keyed by the master key (`userName`), so the bucket's owner sees no user ID.
    public static func user(_ userID: UserID, with manager: DiskManager) -> String {
        "users/\(userName(userID, with: manager)).rec"
    }
    /// The keyed name of a user's record.
    public static func userName(_ userID: UserID, with manager: DiskManager) -> String {
        manager.objectName(["user", userID.rawValue])
    }
    /// A user's record as stores before sealing wrote it: plain JSON named by the user ID (refused).
    public static func legacyUser(_ userID: UserID) -> String { "users/\(userID.rawValue).json" }
    /// An identity's avatar (an encrypted file), under a name keyed by the master key.
    public static func avatar(_ userID: UserID, _ identityID: IdentityID, with manager: DiskManager) -> String {
        "avatars/\(manager.objectName(["avatar", userID.rawValue, identityID.rawValue])).ddf"
    }

    /// The node ID a record key names (sealed or legacy), if it is a well-formed record key.
    public static func nodeID(ofRecordKey key: String) -> NodeID? {
        recordName(ofKey: key)?.nodeID
    }

    /// The record to read for each node a listing of `records/` holds: its sealed one if it has one, else its
    /// legacy JSON one; by node ID.
    public static func currentRecords(_ objects: [ObjectInfo]) -> [(nodeID: NodeID, key: String, sealed: Bool)] {
        var chosen: [NodeID: (key: String, sealed: Bool)] = [:]
        for object in objects {
            guard let name = recordName(ofKey: object.key) else { continue }
            if chosen[name.nodeID]?.sealed != true { chosen[name.nodeID] = (object.key, name.sealed) }
        }
        return chosen.map { ($0.key, $0.value.key, $0.value.sealed) }.sorted { $0.nodeID.rawValue < $1.nodeID.rawValue }
    }

    /// The node a record key names and whether it is a sealed record (else a legacy JSON one).
    public static func recordName(ofKey key: String) -> (nodeID: NodeID, sealed: Bool)? {
        guard key.hasPrefix(recordsPrefix) else { return nil }
        let sealed = key.hasSuffix(".rec")
        guard sealed || key.hasSuffix(".json"), let id = try? NodeID(String(key.dropFirst(recordsPrefix.count).dropLast(sealed ? 4 : 5))) else {
            return nil
        }
        return (id, sealed)
    }

    /// What a key under `users/` is: a sealed user record's keyed name, or the user ID of an unsealed one.
    public static func userRecordName(ofKey key: String) -> (name: String, sealed: Bool)? {
        guard key.hasPrefix(usersPrefix) else { return nil }
        let sealed = key.hasSuffix(".rec")
        guard sealed || key.hasSuffix(".json") else { return nil }
        let name = String(key.dropFirst(usersPrefix.count).dropLast(sealed ? 4 : 5))
        guard !name.isEmpty, !name.contains("/") else { return nil }
        return (name, sealed)
    }
}
