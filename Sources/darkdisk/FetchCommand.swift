import ArgumentParser
import DarkDisk
import DarkDiskCloud
import Foundation

struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Download a node's data, metadata or thumbnail, or a user's avatar, from the remote into the cache pool.",
        discussion: """
            Data downloads in parts and resumes an interrupted download from the bytes it has; metadata and \
            thumbnails take one range request each. Shows a progress bar (bytes, rate, time left) on a \
            terminal; quiet otherwise.
            """)

    @OptionGroup var targetOptions: TargetOptions

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: ArgumentHelp("Parts of the data downloaded at once.", valueName: "N"))
    var parallel: Int = 4

    @Option(help: ArgumentHelp("Bytes per part (at least 65536); an interrupted download resumes within a part.", valueName: "BYTES"))
    var partSize: UInt64 = 8 << 20

    func validate() throws {
        guard (1...64).contains(parallel) else { throw ValidationError("--parallel must be between 1 and 64") }
        guard partSize >= 65536 else { throw ValidationError("--part-size must be at least 65536") }
    }

    func run() async throws {
        let target = try targetOptions.target(identityRequired: false)
        let manager = try storeOptions.open()
        let downloads = DownloadManager(manager: manager, remote: try StoreRemote.remote(for: manager), partSize: partSize,
                                        parallelParts: parallel)
        let bar = isatty(STDERR_FILENO) == 1 ? ProgressBar() : nil
        let summary: String
        switch target {
        case .node(let id, .data):
            let ticket = downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true))
            ticket.onProgress { bar?.show($0) }
            let download = try await ticket.value
            summary = "fetched node '\(id)': \(download.export?.plaintextSize ?? 0) bytes"
        case .node(let id, let kind):
            let component: NodeMetaComponents = kind == .metadata ? .metadata : .thumbnail
            let ticket = downloads.downloadNodeMeta(id, components: component, options: DownloadOptions(cacheToDiskManager: true))
            ticket.onProgress { bar?.show($0) }
            let meta = try await ticket.value
            guard let bytes = kind == .metadata ? meta.metadata : meta.thumbnail else {
                throw CLIError("node '\(id)' has no \(kind.rawValue)")
            }
            summary = "fetched the \(kind.rawValue) of node '\(id)': \(bytes.count) bytes"
        case .avatar(let user, let identity):
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
}
