import ArgumentParser
import DarkDiskStore
import DarkDiskCloud
import Foundation

struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Download a node's data, metadata or thumbnail, or a user's avatar, from the remote into the cache pool (or, with --persistent, to keep).",
        discussion: """
            Data downloads in parts and resumes an interrupted download from the bytes it has; metadata and \
            thumbnails take one range request each. Shows a progress bar (bytes, rate, time left) on a \
            terminal; quiet otherwise. A file larger than its pool's max size cannot be cached: the fetch \
            then fails and says so; --persistent keeps it outside the cache pool's limit. A local copy of the \
            data that does not authenticate (damaged on disk) is downloaded again, pinned or not, unless its \
            change is not uploaded yet (then it is the only copy, and is left as it is).
            """)

    @OptionGroup var targetOptions: TargetOptions

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: ArgumentHelp("Parts of the data downloaded at once.", valueName: "N"))
    var parallel: Int = 4

    @Option(help: ArgumentHelp("Bytes per part (at least 65536); an interrupted download resumes within a part.", valueName: "BYTES"))
    var partSize: UInt64 = 8 << 20

    @Flag(help: "Keep the node's file persistently (never evicted, outside the cache pool's limit); a node already cached is made persistent.")
    var persistent = false

    @Flag(help: "Hand the download of a node's data to the running mount of this store and return at once (darkdisk status shows its progress).")
    var background = false

    func validate() throws {
        guard (1...64).contains(parallel) else { throw ValidationError("--parallel must be between 1 and 64") }
        guard partSize >= 65536 else { throw ValidationError("--part-size must be at least 65536") }
    }

    func run() async throws {
        let target = try targetOptions.target(identityRequired: false)
        let manager = try storeOptions.open()
        if background {
            guard case .node(let id, .data) = target else { throw CLIError("--background hands over a node's data (--node ID), not a thumbnail, metadata or avatar") }
            guard RemoteHealth.recorded(in: manager) != nil else {
                throw CLIError("no mount of this store is running to hand the download to; mount it, or fetch without --background")
            }
            try manager.outline.requestDownload(id, persistent: persistent)
            FileHandle.standardError.write(Data("handed node '\(id)' to the running mount; darkdisk status shows its progress\n".utf8))
            return
        }
        let downloads = DownloadManager(manager: manager, remote: try StoreRemote.remote(for: manager), partSize: partSize,
                                        parallelParts: parallel)
        let board = TransferBoard(downloads: downloads)  // `darkdisk status` elsewhere lists this fetch
        defer { board.stop() }
        let bar = isatty(STDERR_FILENO) == 1 ? ProgressBar() : nil
        defer { bar?.finish() }  // an error is then printed on a line of its own
        let summary: String
        switch target {
        case .node(let id, .data):
            try dropDamagedCopy(of: id, manager: manager)
            let ticket = downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true, storePersistently: persistent))
            ticket.onProgress { bar?.show($0) }
            let download = try await ticket.value
            guard let export = download.export else {
                let failure = try cannotKeep(id, .data, manager: manager, encryptedSize: download.cryptoFile.path)
                manager.files.deleteFileIfUnmanaged(download.cryptoFile.path)  // the download the store could not keep
                throw failure
            }
            summary = "fetched node '\(id)': \(export.plaintextSize) bytes" + (export.isStoredPersistently ? ", kept persistently" : "")
        case .node(let id, let kind):
            let component: NodeMetaComponents = kind == .metadata ? .metadata : .thumbnail
            let ticket = downloads.downloadNodeMeta(id, components: component, options: DownloadOptions(cacheToDiskManager: true))
            ticket.onProgress { bar?.show($0) }
            let meta = try await ticket.value
            guard let bytes = kind == .metadata ? meta.metadata : meta.thumbnail else {
                throw CLIError("node '\(id)' has no \(kind.rawValue)")
            }
            if persistent { try await manager.files.makeNodeFilePersistent(true, nodeID: id, kind: kind) }
            guard try await manager.files.storedFile(id, kind: kind) != nil else {
                throw try cannotKeep(id, kind, manager: manager, encryptedSize: nil)
            }
            summary = "fetched the \(kind.rawValue) of node '\(id)': \(bytes.count) bytes" + (persistent ? ", kept persistently" : "")
        case .avatar(let user, let identity):
            guard !persistent else {
                throw CLIError("--persistent goes with --node; to keep a user's avatars use 'darkdisk persist --user \(user) on'")
            }
            let ticket = downloads.downloadUserAvatar(user, identityID: identity, options: DownloadOptions(cacheToDiskManager: true))
            ticket.onProgress { bar?.show($0) }
            let avatar = try await ticket.value
            guard let image = avatar.image else {
                throw CLIError("identity '\(avatar.identityID)' of user '\(user)' has no avatar")
            }
            summary = "fetched the avatar of '\(user)' / '\(avatar.identityID)': \(image.count) bytes"
        }
        bar?.finish()
        if bar != nil { FileHandle.standardError.write(Data((summary + "\n").utf8)) }
    }

    /// A local copy of the node's data that does not authenticate (a flipped bit, a torn write) goes, so that
    /// the fetch downloads it again, pinned or not: `fetch` is how a damaged file is repaired. One whose
    /// change is not uploaded yet is the only copy there is: refused, and left for the user.
    private func dropDamagedCopy(of id: NodeID, manager: DiskManager) throws {
        guard let export = try manager.files.nodeFile(id, kind: .data) else { return }
        let damage: (any Error)?
        do { try export.reader().authenticateAll(); damage = nil } catch { damage = error }
        guard let damage else { return }
        guard try manager.uploadQueue.change(of: id) == nil, try manager.outline.entry(id)?.cloudVersion != nil else {
            throw CLIError("the local copy of node '\(id)' does not authenticate (\(damage)), and the remote has no copy of it to fetch: it is left as it is")
        }
        FileHandle.standardError.write(Data("darkdisk: the local copy of node '\(id)' does not authenticate (\(damage)); it is downloaded again\n".utf8))
        try manager.outline.invalidateLocalFiles(of: id, kinds: [.data])
    }

    /// The one-line failure of a fetch whose file its pool cannot keep (larger than the pool's max size).
    private func cannotKeep(_ id: NodeID, _ kind: FileKind, manager: DiskManager, encryptedSize path: String?) throws -> CLIError {
        let pool = kind.pool.rawValue
        let limit = try manager.files.settings(for: kind.pool).maxSize
        let size = path.flatMap { try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? UInt64 }.map { " (\($0) bytes encrypted)" } ?? ""
        return CLIError("the \(kind.rawValue) of node '\(id)'\(size) is larger than the \(pool) pool's max size (\(limit) bytes), so the cache cannot keep it: "
                        + "fetch it with --persistent, or raise pool.\(pool).max_size")
    }
}
