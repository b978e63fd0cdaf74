import DarkDiskStore
import DarkDiskCrypto
import Foundation

extension DownloadManager {
    /// Downloads the avatar of one identity of a user (nil: the user's display identity), as listed in the
    /// user's record in the remote. An identity without an avatar gives a result whose `image` is nil. With
    /// `options.cacheToDiskManager` (the default) the avatar enters the avatars pool. An avatar already
    /// stored for an explicitly named identity is answered from the store, unless `options.policy` is
    /// `.remote`; with `.storedOnly` nothing is downloaded (without an identity: the user's most recently
    /// stored avatar), and a missing one is a `notLocal` error.
    public func downloadUserAvatar(_ userID: UserID, identityID: IdentityID? = nil,
                                   options: DownloadOptions = .userAvatar) -> DownloadTicket<UserAvatarDownload> {
        if options.policy != .remote, let local: DownloadTicket<UserAvatarDownload> = answered(options, {
            try storedAvatar(userID, identityID, mostRecent: options.policy == .storedOnly)
        }) {
            return local
        }
        if options.policy == .storedOnly {
            let whose = identityID.map { "identity '\($0)' of user '\(userID)'" } ?? "user '\(userID)'"
            return DownloadTicket(options: options, result: .failure(RemoteError(.notLocal, "\(whose) has no avatar stored locally (and this request may not download)")))
        }
        let refresh = options.policy == .remote
        return transfers.ticket(.userAvatar(userID, identityID, options.policy), options: options) { transfer in
            try await self.transferAvatar(userID, identityID, refresh: refresh, transfer)
        }
    }

    /// The stored avatar of `identityID`; without one, with `mostRecent`, the user's most recently stored.
    private func storedAvatar(_ userID: UserID, _ identityID: IdentityID?, mostRecent: Bool) throws -> UserAvatarDownload? {
        var candidates: [IdentityID] = identityID.map { [$0] } ?? []
        if identityID == nil, mostRecent {
            candidates = try manager.files.storedAvatars(userID).sorted { $0.modified > $1.modified }.compactMap { try? IdentityID($0.identityID) }
        }
        for identity in candidates {
            if let local = try manager.files.userAvatar(userID, identityID: identity) {
                return UserAvatarDownload(userID: userID, identityID: identity, image: try Self.plaintext(of: local), export: local)
            }
        }
        return nil
    }

    private func transferAvatar(_ userID: UserID, _ requested: IdentityID?, refresh: Bool,
                                _ transfer: Transfer<UserAvatarDownload>) async throws -> UserAvatarDownload {
        guard let data = try await remote.readAll(CloudLayout.user(userID, with: manager)) else {
            throw RemoteError(.notFound, "user '\(userID)' has no record in \(remote.url)")
        }
        let record = try UserRecord.open(data, name: CloudLayout.userName(userID, with: manager), expected: userID, with: manager)
        guard let identity = record.identity(requested), let identityID = try? IdentityID(identity.identityID) else {
            throw RemoteError(.notFound, requested.map { "user '\(userID)' has no identity '\($0)'" } ?? "user '\(userID)' has no identities")
        }
        guard let avatar = identity.avatar, let wrapped = Hex.decode(avatar.wrappedKey) else {
            return UserAvatarDownload(userID: userID, identityID: identityID, image: nil, export: nil)
        }
        let manager = self.manager
        let key: SymmetricKey
        switch try await blocking({ () throws -> StoredOrKey in
            if !refresh, let local = try manager.files.userAvatar(userID, identityID: identityID) {
                return .stored(UserAvatarDownload(userID: userID, identityID: identityID, image: try Self.plaintext(of: local), export: local))
            }
            return .key(try manager.keys.unwrap(wrapped, for: .avatar(userID, identityID)))
        }) {
        case .stored(let download): return download
        case .key(let unwrapped): key = unwrapped
        }
        let objectKey = CloudLayout.avatar(userID, identityID, with: manager)
        for attempt in 0..<3 {
            guard let info = try await remote.info(objectKey) else {
                throw RemoteError(.notFound, "the avatar of '\(userID)' / '\(identityID)' is in its record but not in \(remote.url)")
            }
            guard info.size <= 64 << 20 else {
                throw RemoteError(.invalidResponse, "the avatar of '\(userID)' / '\(identityID)' is \(info.size) bytes, too large for an avatar")
            }
            // Progress as the bytes arrive, like a data download's: count, throughput, time remaining.
            let started = Date()
            var received = Data(capacity: Int(info.size))
            func report() {
                let elapsed = max(Date().timeIntervalSince(started), 0.001)
                transfer.report(DownloadProgress(completedBytes: UInt64(received.count), totalBytes: info.size, resumedBytes: 0,
                                                 throughput: Double(received.count) / elapsed))
            }
            report()
            let fetched: Result<Data, RemoteError>
            do {
                try await remote.read(objectKey, range: 0..<info.size, ifMatch: info.etag) { (chunk: UnsafeRawBufferPointer) throws(RemoteError) in
                    received.append(contentsOf: chunk)
                    report()
                }
                fetched = .success(received)
            } catch {
                fetched = .failure(error)
            }
            if case .failure(let error) = fetched, error.code == .changed, attempt < 2 { continue }  // replaced meanwhile
            let bytes = try fetched.get()
            guard bytes.count == Int(info.size) else {
                throw RemoteError(.invalidResponse, "the avatar of '\(userID)' / '\(identityID)' arrived with \(bytes.count) of its \(info.size) bytes")
            }
            let folder = try cacheFolder("partial")
            return try await blocking { () throws -> UserAvatarDownload in
                let path = folder + "/" + UUID().uuidString + ".avatar"
                defer { unlink(path) }
                guard FileManager.default.createFile(atPath: path, contents: bytes, attributes: [.posixPermissions: 0o600]) else {
                    throw RemoteError(.io, "cannot write \(path)")
                }
                let image: Data
                do throws(CryptoError) {
                    image = try FileConversion.decryptIntoMemory(path: path, key: key)
                } catch {
                    throw RemoteError(.invalidResponse, "the avatar of '\(userID)' / '\(identityID)' does not authenticate: \(error.message)")
                }
                guard transfer.decideCaching() else {
                    return UserAvatarDownload(userID: userID, identityID: identityID, image: image, export: nil)
                }
                let file = CryptoFile(path: path, format: .cacheFile, key: key)
                do {
                    let export = try manager.importUserAvatar(DiskImport(cryptoFile: file), userID: userID, identityID: identityID)
                    return UserAvatarDownload(userID: userID, identityID: identityID, image: image, export: export)
                } catch let error as DarkDiskError where error.code == .tooLarge {
                    return UserAvatarDownload(userID: userID, identityID: identityID, image: image, export: nil)  // larger than its pool
                }
            }
        }
        throw RemoteError(.changed, "the avatar of '\(userID)' / '\(identityID)' keeps changing in the cloud")
    }
}

/// A stored avatar, or the key to fetch one with.
private enum StoredOrKey: Sendable {
    case stored(UserAvatarDownload)
    case key(SymmetricKey)
}
