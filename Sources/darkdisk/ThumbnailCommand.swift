import ArgumentParser
import DarkDiskStore
import DarkDiskCloud
import DarkDiskImages
import Foundation

struct ThumbnailCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "thumbnail",
        abstract: "Write a node's thumbnail, optionally resized, to stdout or a file.",
        discussion: """
            The thumbnail comes from the store, else from the remote (one range request; it is then kept in \
            the thumbnails pool). With --size it is scaled to fit inside WxH, keeping its aspect ratio, by \
            libvips; --format re-encodes it. A node without a thumbnail is an error.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: ArgumentHelp("The node whose thumbnail to write.", valueName: "ID"))
    var node: String

    @Option(help: ArgumentHelp("Scale to fit inside WxH (for example 256x256), aspect kept.", valueName: "WxH"))
    var size: String?

    @Option(help: ArgumentHelp("Encode as jpeg, png or webp, optionally with a quality (jpeg90); default: as stored.", valueName: "FORMAT"))
    var format: String?

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to FILE instead of standard output ('-': standard output).", valueName: "FILE"))
    var output: String?

    func validate() throws {
        do {
            if let size { _ = try ImageSize(parsing: size) }
            if let format { _ = try OutputFormat(parsing: format) }
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        let id = try NodeID(node)
        let manager = try storeOptions.open()
        let images = ImageManager(diskManager: manager, downloadManager: DownloadManager(manager: manager, remote: try StoreRemote.remote(for: manager)),
                                  callbackQueue: .global())
        do {
            let output = try format.map { try OutputFormat(parsing: $0) }
            var processor: ImageProcessor?
            if let size { processor = .resize(toFit: try ImageSize(parsing: size), as: output) } else if let output { processor = .encode(as: output) }
            guard let image = try await images.nodeThumbnail(id, processor: processor) else {
                throw CLIError("node '\(id)' has no thumbnail")
            }
            try ImageOutput.write(image.data, to: self.output)
        } catch let error as ImageError {
            throw CLIError(error.message)
        }
    }
}
