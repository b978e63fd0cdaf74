import DarkDiskCrypto
import DarkDisk
import Foundation

/// The record of a user in the remote: its identities, which one is displayed, and where each identity's
/// avatar is (an encrypted file under its own key, wrapped by the master key). The seeds keep avatar
/// sources in the user record; `downloadUserAvatar` reads them from here.
public struct UserRecord: Codable, Sendable, Equatable {
    public var version: Int = 1
    public var userID: String
    public var displayIdentityID: String?
    public var identities: [Identity]

    public struct Identity: Codable, Sendable, Equatable {
        public var identityID: String
        public var avatar: Avatar?
    }

    /// An uploaded avatar: its encrypted size, its image size (so a mount lists it before it is downloaded;
    /// absent from records written before it was added), and hex of its key wrapped by the master key.
    public struct Avatar: Codable, Sendable, Equatable {
        public var size: UInt64
        public var plaintextSize: UInt64?
        public var wrappedKey: String

        public init(size: UInt64, plaintextSize: UInt64?, wrappedKey: String) {
            self.size = size
            self.plaintextSize = plaintextSize
            self.wrappedKey = wrappedKey
        }
    }

    public init(userID: UserID) {
        self.userID = userID.rawValue
        self.identities = []
    }

    /// Parses a fetched record, refusing one that names another user or is malformed.
    public static func decode(_ data: Data, expected userID: UserID) throws(RemoteError) -> UserRecord {
        guard data.count <= 256 * 1024, let record = try? JSONDecoder().decode(UserRecord.self, from: data), record.version == 1 else {
            throw RemoteError(.invalidResponse, "the record of user '\(userID)' is malformed")
        }
        guard record.userID == userID.rawValue else {
            throw RemoteError(.invalidResponse, "the record of user '\(userID)' describes another user")
        }
        for identity in record.identities {
            guard (try? IdentityID(identity.identityID)) != nil, identity.avatar.map({ [60, SymmetricKey.boundWrappedSize].contains(Hex.decode($0.wrappedKey)?.count) }) ?? true else {
                throw RemoteError(.invalidResponse, "the record of user '\(userID)' has a malformed identity")
            }
        }
        return record
    }

    public func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)) ?? Data()
    }

    /// The identity to use: `identityID` if given (nil if the user has no such identity), else the display
    /// identity, else the first one.
    public func identity(_ identityID: IdentityID?) -> Identity? {
        if let identityID { return identities.first { $0.identityID == identityID.rawValue } }
        return identities.first { $0.identityID == displayIdentityID } ?? identities.first
    }
}
