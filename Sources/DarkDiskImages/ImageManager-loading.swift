import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import Foundation

extension ImageManager {
    /// Loads the image bytes of `source`: from the DiskManager if local, else through the DownloadManager
    /// (which stores what it fetches in the DiskManager's cache pool), unless `policy` says never to
    /// download. `completion` runs on the work queue.
    func load(_ source: ImageSource, policy: FetchPolicy, completion: @escaping @Sendable (Result<LoadedImage, ImageError>) -> Void) {
        switch source {
        case .thumbnail(let node): loadThumbnail(node, policy: policy, completion: completion)
        case .avatar(let user, let identity): loadAvatar(user, identity, policy: policy, completion: completion)
        }
    }

    private func loadThumbnail(_ node: NodeID, policy: FetchPolicy, completion: @escaping @Sendable (Result<LoadedImage, ImageError>) -> Void) {
        let local: LoadedImage?
        do throws(ImageError) {
            local = try localThumbnail(node)
        } catch {
            return completion(.failure(error))
        }
        if let local { return completion(.success(local)) }
        if policy == .storedOnly {
            return completion(.failure(ImageError(.notAvailable, "the thumbnail of node '\(node)' is not on local disk (and this fetch may not download)")))
        }
        guard let downloadManager else {
            return completion(.failure(ImageError(.notAvailable, "node '\(node)' has no thumbnail on local disk and there is no remote to download it from")))
        }
        downloadManager.downloadNodeMeta(node, components: .thumbnail, options: DownloadOptions.nodeMeta.with(policy)).onCompletion(on: workPool) { result in
            completion(self.downloadedThumbnail(node, result))
        }
    }

    /// The loaded image of a thumbnail download's result; runs on the work queue.
    func downloadedThumbnail(_ node: NodeID, _ result: Result<NodeMetaDownload, any Error>) -> Result<LoadedImage, ImageError> {
        switch result {
        case .success(let meta):
            let stored = try? diskManager.files.storedFile(node, kind: .thumbnail)?.fileID
            return .success(LoadedImage(bytes: meta.thumbnail, sourceFileID: stored))
        case .failure(let error):
            return .failure(Self.downloadError(error, what: "the thumbnail of node '\(node)'"))
        }
    }

    /// Whether loading `source` needs a download, by a cheap read of the DiskManager's index: not when the
    /// image (or the node's whole cloud file) is on local disk, when the outline says the node has no
    /// thumbnail, or when there is no remote. When the index cannot say, the load finds out. Never with a
    /// `.storedOnly` policy; always, when there is a remote, with `.remote`.
    func needsDownload(_ source: ImageSource, _ policy: FetchPolicy) -> Bool {
        guard downloadManager != nil, policy != .storedOnly else { return false }
        if policy == .remote { return true }
        do {
            switch source {
            case .thumbnail(let node):
                if try diskManager.files.storedFile(node, kind: .thumbnail) != nil { return false }
                if let data = try diskManager.files.storedFile(node, kind: .data),
                   data.isRemoteVersion(of: try diskManager.outline.entry(node)) { return false }
                guard let outline = try diskManager.outline.entry(node) else { return false }
                return outline.thumbnailSize != 0
            case .avatar(let user, let identity):
                // Without an identity, the user's record in the remote says which one is displayed.
                guard let identity else { return true }
                return try diskManager.files.storedAvatar(user, identityID: identity) == nil
            }
        } catch {
            return false
        }
    }

    /// Starts (or joins: the DownloadManager coalesces identical requests) the download `source` needs,
    /// makes `shared` wait on it too, and returns the caller's own ticket of it.
    func requestDownload(_ source: ImageSource, policy: FetchPolicy, into shared: FetchDownload) -> FetchTicket? {
        guard let downloadManager else { return nil }
        switch source {
        case .thumbnail(let node):
            let ticket = downloadManager.downloadNodeMeta(node, components: .thumbnail, options: DownloadOptions.nodeMeta.with(policy))
            shared.add(ticket, on: workPool) { self.downloadedThumbnail(node, $0) }
            return .thumbnail(ticket)
        case .avatar(let user, let identity):
            let ticket = downloadManager.downloadUserAvatar(user, identityID: identity, options: DownloadOptions.userAvatar.with(policy))
            shared.add(ticket, on: workPool) { self.downloadedAvatar(user, identity, $0) }
            return .avatar(ticket)
        }
    }

    /// The thumbnail from local disk: its own file, else the section of the node's local cloud file. A
    /// definite "none" when the outline says the node has no thumbnail, or the node is local-only (never
    /// pushed) without one. Nil when it has to be downloaded.
    private func localThumbnail(_ node: NodeID) throws(ImageError) -> LoadedImage? {
        do {
            if let own = try diskManager.files.nodeFile(node, kind: .thumbnail) {
                return LoadedImage(bytes: try Self.plaintext(of: own, section: nil), sourceFileID: own.fileID)
            }
            if let whole = try diskManager.files.nodeFile(node, kind: .data), whole.isRemoteVersion(of: try diskManager.outline.entry(node)) {
                let bytes = try Self.plaintext(of: whole, section: CloudFileSection.thumbnail.rawValue)
                return LoadedImage(bytes: bytes.isEmpty ? nil : bytes, sourceFileID: nil)
            }
            if let outline = try diskManager.outline.entry(node) {
                return outline.thumbnailSize == 0 ? LoadedImage(bytes: nil) : nil
            }
            if try !diskManager.files.storedFiles(node).isEmpty { return LoadedImage(bytes: nil) }
        } catch {
            throw Self.storeError(error, what: "the thumbnail of node '\(node)'")
        }
        throw ImageError(.notAvailable, "node '\(node)' is not stored locally and the remote's outline does not have it (pull the outline first)")
    }

    private func loadAvatar(_ user: UserID, _ identity: IdentityID?, policy: FetchPolicy,
                            completion: @escaping @Sendable (Result<LoadedImage, ImageError>) -> Void) {
        do {
            if let identity, let local = try diskManager.files.userAvatar(user, identityID: identity) {
                return completion(.success(LoadedImage(bytes: try Self.plaintext(of: local, section: nil), sourceFileID: local.fileID, identityID: identity)))
            }
            if downloadManager == nil || policy == .storedOnly, identity == nil, let local = try mostRecentLocalAvatar(user) {
                // No remote to ask for the display identity: the most recently stored avatar.
                return completion(.success(local))
            }
        } catch {
            return completion(.failure(Self.storeError(error, what: "the avatar of user '\(user)'")))
        }
        let whose = identity.map { "identity '\($0)' of user '\(user)'" } ?? "user '\(user)'"
        if policy == .storedOnly {
            return completion(.failure(ImageError(.notAvailable, "\(whose) has no avatar on local disk (and this fetch may not download)")))
        }
        guard let downloadManager else {
            return completion(.failure(ImageError(.notAvailable, "\(whose) has no avatar on local disk and there is no remote to download it from")))
        }
        downloadManager.downloadUserAvatar(user, identityID: identity, options: DownloadOptions.userAvatar.with(policy)).onCompletion(on: workPool) { result in
            completion(self.downloadedAvatar(user, identity, result))
        }
    }

    /// The loaded image of an avatar download's result; runs on the work queue.
    func downloadedAvatar(_ user: UserID, _ identity: IdentityID?, _ result: Result<UserAvatarDownload, any Error>) -> Result<LoadedImage, ImageError> {
        switch result {
        case .success(let avatar):
            return .success(LoadedImage(bytes: avatar.image, sourceFileID: avatar.export?.fileID, identityID: avatar.identityID))
        case .failure(let error):
            let failure = Self.downloadError(error, what: "the avatar of user '\(user)'")
            // The remote could not say which identity is displayed (unreachable, say): a stored avatar
            // of the user is better than nothing. An unknown user stays an error.
            if identity == nil, failure.code == .download, var local = try? mostRecentLocalAvatar(user) {
                local.provisional = true
                return .success(local)
            }
            // The remote has no record of the user, but this store has avatars of theirs (imported here):
            // those are the user's avatars, and the most recent one is the one to show.
            if identity == nil, failure.code == .notAvailable, let local = try? mostRecentLocalAvatar(user) {
                return .success(local)
            }
            // The remote has no record of the user (ZeroDark.cloud's 404) or no such identity: the user has no
            // avatar, a negative result cached like the others, not an error looked up again on every fetch.
            if failure.code == .notAvailable {
                return .success(LoadedImage(bytes: nil, sourceFileID: nil, identityID: identity))
            }
            return .failure(failure)
        }
    }

    /// The user's most recently stored avatar that is still on local disk, if any.
    private func mostRecentLocalAvatar(_ user: UserID) throws -> LoadedImage? {
        for avatar in try diskManager.files.storedAvatars(user).sorted(by: { $0.modified > $1.modified }) {
            guard let identity = try? IdentityID(avatar.identityID), let local = try diskManager.files.userAvatar(user, identityID: identity) else { continue }
            return LoadedImage(bytes: try Self.plaintext(of: local, section: nil), sourceFileID: local.fileID, identityID: identity)
        }
        return nil
    }

    /// The whole plaintext of a stored file's content section (or of `section` of a cloud file).
    static func plaintext(of export: DiskExport, section: Int?) throws -> Data {
        try withExtendedLifetime(export) {
            let reader = try export.reader()
            let section = section ?? reader.dataSection
            return Data(try reader.read(section: section, offset: 0, count: Int(reader.plaintextSize(ofSection: section))))
        }
    }

    static func storeError(_ error: any Error, what: String) -> ImageError {
        if let error = error as? ImageError { return error }
        if let error = error as? DarkDiskError { return ImageError(.store, "cannot read \(what): \(error.message)") }
        if let error = error as? CryptoError { return ImageError(.store, "cannot read \(what): \(error.message)") }
        return ImageError(.store, "cannot read \(what): \(error)")
    }

    static func downloadError(_ error: any Error, what: String) -> ImageError {
        if let error = error as? RemoteError {
            return ImageError(error.code == .notFound ? .notAvailable : .download, "cannot download \(what): \(error.message)")
        }
        if let error = error as? CryptoError { return ImageError(.download, "cannot download \(what): \(error.message)") }
        if let error = error as? DarkDiskError { return ImageError(.store, "cannot store \(what): \(error.message)") }
        if error is CancellationError { return ImageError(.download, "the download of \(what) was cancelled") }
        return ImageError(.download, "cannot download \(what): \(error)")
    }
}
