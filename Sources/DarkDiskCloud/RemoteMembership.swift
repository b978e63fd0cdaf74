import DarkDiskStore
import Foundation

/// Whether a store may attach to a remote: a remote that holds another store's nodes is read only with
/// that store's key, so a store never attaches to it with a key of its own (every node would fail to
/// unwrap, and a new key published there would mislead every machine that joins after).
enum RemoteMembership {
    /// What the remote holds that a key must open: its passphrase-protected key file, and how many node
    /// and user records it has.
    struct Contents {
        let keyFile: Data?
        let records: [ObjectInfo]
        let users: Int

        var isEmpty: Bool { keyFile == nil && records.isEmpty && users == 0 }
    }

    static func contents(of remote: any Remote) async throws -> Contents {
        Contents(keyFile: try await remote.readAll(CloudLayout.masterKey),
                 records: try await remote.list(prefix: CloudLayout.recordsPrefix).filter { CloudLayout.recordName(ofKey: $0.key) != nil },
                 users: try await remote.list(prefix: CloudLayout.usersPrefix).count)
    }

    /// `init --remote` without a key file to join: refuses a remote that already holds nodes or users,
    /// since the new store's random key could read none of them.
    static func refuseNewKey(for remote: any Remote, holding contents: Contents, keyPath: String) throws {
        guard contents.keyFile == nil, !(contents.records.isEmpty && contents.users == 0) else { return }
        throw RemoteError(.foreignKey, "\(remote.url) already holds \(contents.records.count) nodes and \(contents.users) users under another store's key, and no passphrase-protected key to join (keys/master.json): a new key could read none of them; copy that store's key file to \(keyPath) and run 'darkdisk remote set \(remote.url)'")
    }

    /// `remote set`: the remote's key file (unwrapped with the store's passphrase) must be this store's key,
    /// and the node keys in its records must unwrap with it.
    static func checkSameKey(_ manager: DiskManager, remote: any Remote, holding contents: Contents, passphrase: [UInt8]?) async throws {
        if let keyFile = contents.keyFile {
            guard let passphrase else {
                throw RemoteError(.foreignKey, "\(remote.url) keeps a passphrase-protected key: pass the store's --passphrase-file so it can be compared with this store's key")
            }
            guard let key = try? MasterKeyFile.unwrap(keyFile, passphrase: passphrase) else {
                throw RemoteError(.foreignKey, "\(remote.url) holds another store's key (this store's passphrase does not open it)")
            }
            guard manager.keys.isMasterKey(key) else { throw RemoteError(.foreignKey, "\(remote.url) holds another store's key") }
        }
        // One record is enough to tell whose nodes these are: they all wrap their keys with one master key.
        if let first = contents.records.first, let name = CloudLayout.recordName(ofKey: first.key),
           let data = try await remote.readAll(first.key) {
            let refused = RemoteError(.foreignKey, "\(remote.url) holds nodes sealed under another store's key (\(first.key) does not open with this store's key)")
            let read: OpenedRecord
            do { read = try RecordObject.read(data, key: first.key, with: manager) } catch {
                if name.sealed { throw refused }
                throw error
            }
            // A tombstone that opens was sealed under this key; a record's node key must unwrap with it too.
            if let record = read.object.record {
                do { _ = try manager.keys.unwrap(try record.outlineEntry().wrappedKey, for: .node(read.nodeID)) } catch { throw refused }
            }
        }
    }
}
