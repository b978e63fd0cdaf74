import DarkDiskCrypto
import DarkDisk

/// Where things live in a remote bucket: one cloud file and one small sealed record per node (older stores
/// wrote plain JSON records, still read), one record per user with an encrypted file per identity avatar,
/// and the passphrase-wrapped master key (like gocryptfs' `gocryptfs.conf`).
public enum CloudLayout {
    public static let recordsPrefix = "records/"
    public static let usersPrefix = "users/"
    public static let masterKey = "keys/master.json"

    public static func cloudFile(_ nodeID: NodeID) -> String { "nodes/\(nodeID.rawValue).ddc" }
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
