import DarkDiskCrypto
import DarkDiskStore
import Foundation

/// The record of a user in the remote: its identities, which one is displayed, and where each identity's
/// avatar is (an encrypted file under its own key, wrapped by the master key bound to the avatar). ZeroDark.cloud's
/// framework keeps avatar sources in the user record; `downloadUserAvatar` reads them from here.
///
/// In the bucket it is sealed (`sealed(with:)`, version 2) under the record key, the AAD binding its keyed
/// object name, which must be the name of the user it holds: the bucket's owner sees neither user nor
/// identity IDs, and a record copied to another user's name does not open there.
public struct UserRecord: Codable, Sendable, Equatable {
    public var version: Int = 2
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

    /// What a sealed user record under the keyed name `name` is bound to: its format and its name.
    static func sealingContext(_ name: String) -> [UInt8] {
        Array("darkdisk user record 2".utf8) + [0] + Array(name.utf8)
    }

    /// The sealed form of this record, as it goes into the bucket at `CloudLayout.user(_:with:)`.
    public func sealed(with manager: DiskManager) throws(RemoteError) -> Data {
        guard let id = try? UserID(userID), version == 2 else {
            throw RemoteError(.invalidResponse, "only a version 2 record of a valid user is sealed")
        }
        do {
            return Data(try manager.keys.sealRecord(RecordPadding.padded(encoded()), context: Self.sealingContext(CloudLayout.userName(id, with: manager))))
        } catch {
            throw RemoteError(.io, "cannot seal the record of user '\(userID)': \(error.message)")
        }
    }

    /// Opens a sealed user record read under the keyed name `name`, refusing one that does not authenticate
    /// (altered, copied from another user's name, another key), is malformed, or holds a user whose name is
    /// not `name`; with `expected`, one of another user.
    public static func open(_ data: Data, name: String, expected: UserID? = nil, with manager: DiskManager) throws(RemoteError) -> UserRecord {
        let plaintext: [UInt8]
        let whose = expected.map { "the record of user '\($0)'" } ?? "the user record users/\(name).rec"
        do { plaintext = try manager.keys.openRecord(Array(data), context: sealingContext(name)) } catch {
            throw RemoteError(.invalidResponse, "\(whose) does not authenticate (altered, copied from another user, or sealed under another key)")
        }
        let record = try parse(Data(plaintext), expected: expected)
        guard let id = try? UserID(record.userID), CloudLayout.userName(id, with: manager) == name else {
            throw RemoteError(.invalidResponse, "\(whose) is not under its user's name")
        }
        return record
    }

    /// Parses an opened record's JSON, refusing one that is malformed or (with `expected`) names another user.
    public static func parse(_ data: Data, expected userID: UserID? = nil) throws(RemoteError) -> UserRecord {
        let whose = userID.map { "the record of user '\($0)'" } ?? "a user record"
        guard data.count <= 256 * 1024, let record = try? JSONDecoder().decode(UserRecord.self, from: data), record.version == 2,
              (try? UserID(record.userID)) != nil else {
            throw RemoteError(.invalidResponse, "\(whose) is malformed")
        }
        guard userID.map({ record.userID == $0.rawValue }) ?? true else {
            throw RemoteError(.invalidResponse, "\(whose) describes another user")
        }
        for identity in record.identities {
            guard (try? IdentityID(identity.identityID)) != nil, identity.avatar.map({ [60, SymmetricKey.boundWrappedSize].contains(Hex.decode($0.wrappedKey)?.count) }) ?? true else {
                throw RemoteError(.invalidResponse, "the record of user '\(record.userID)' has a malformed identity")
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
