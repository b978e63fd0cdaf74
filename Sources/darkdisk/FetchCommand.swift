import ArgumentParser
import DarkDisk
import DarkDiskCloud
import Foundation

struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Download a node's data from the remote into the cache pool (resuming an interrupted download).",
        discussion: "Shows a progress bar (bytes, rate, time left) on a terminal; quiet otherwise.")

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: ArgumentHelp("The node to download.", valueName: "ID"))
    var node: String

    @Option(help: ArgumentHelp("Only data is fetched separately; thumbnails and metadata travel in the same cloud file.", valueName: "KIND"))
    var kind: String = "data"

    func run() async throws {
        let id = try NodeID(node)
        guard try FileKind.parseNodeKind(kind) == .data else {
            throw CLIError("only --kind data can be fetched in this version")
        }
        let manager = try storeOptions.open(create: true)
        let downloads = DownloadManager(manager: manager, remote: try StoreRemote.remote(for: manager))
        let bar = isatty(STDERR_FILENO) == 1 ? ProgressBar() : nil
        let export = try await downloads.nodeData(id) { progress in bar?.show(progress) }
        bar?.finish()
        if bar != nil { FileHandle.standardError.write(Data("fetched node '\(id)': \(export.plaintextSize) bytes\n".utf8)) }
    }
}
