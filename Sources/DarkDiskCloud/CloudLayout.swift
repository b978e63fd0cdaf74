import DarkDiskCrypto
import DarkDisk

/// Where things live in a remote bucket: one cloud file and one small sealed record per node (older stores
/// wrote plain JSON records, still read), one record per user with an encrypted file per identity avatar,
/// and the passphrase-wrapped master key (like gocryptfs' `gocryptfs.conf`).
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
    /// A user's record: identities, the display identity, and where each identity's avatar is.
    public static func user(_ userID: UserID) -> String { "users/\(userID.rawValue).json" }
    /// An identity's avatar. Identity IDs may hold `|` and `@` (the seeds' auth0 IDs), so the key uses
    /// their hex form.
    public static func avatar(_ userID: UserID, _ identityID: IdentityID) -> String {
        "avatars/\(userID.rawValue)/\(Hex.encode(Array(identityID.rawValue.utf8))).ddf"
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

    /// The user ID a user-record key names, if it is a well-formed user-record key.
    public static func userID(ofRecordKey key: String) -> UserID? {
        guard key.hasPrefix(usersPrefix), key.hasSuffix(".json") else { return nil }
        return try? UserID(String(key.dropFirst(usersPrefix.count).dropLast(5)))
    }
}
