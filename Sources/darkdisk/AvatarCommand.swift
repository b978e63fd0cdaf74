import ArgumentParser
import DarkDiskStore
import DarkDiskCloud
import DarkDiskImages
import Foundation

struct AvatarCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "avatar",
        abstract: "Write a user's avatar, optionally cropped to a size or a circle, to stdout or a file.",
        discussion: """
            The avatar of --identity, else of the user's display identity (from the user's record in the \
            remote), comes from the store, else from the remote (it is then kept in the avatars pool). With \
            --size it is scaled and centre-cropped to exactly WxH; --circle makes it round (PNG, transparent \
            outside; needs a square size). A user without an avatar (or unknown) is an error, unless \
            --or-default writes the default avatar instead.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: ArgumentHelp("The user whose avatar to write.", valueName: "ID"))
    var user: String

    @Option(help: ArgumentHelp("The identity whose avatar to write (default: the user's display identity).", valueName: "ID"))
    var identity: String?

    @Option(help: ArgumentHelp("Scale and crop to exactly WxH (for example 64x64).", valueName: "WxH"))
    var size: String?

    @Flag(help: "Make the avatar round (PNG with transparency); needs a square --size.")
    var circle = false

    @Option(help: ArgumentHelp("Encode as jpeg, png or webp, optionally with a quality (webp90); default: as stored.", valueName: "FORMAT"))
    var format: String?

    @Flag(help: "Write the default avatar when the user has none.")
    var orDefault = false

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to FILE instead of standard output ('-': standard output).", valueName: "FILE"))
    var output: String?

    func validate() throws {
        do {
            let size = try size.map { try ImageSize(parsing: $0) }
            let format = try format.map { try OutputFormat(parsing: $0) }
            if circle {
                guard let size, size.width == size.height else { throw ValidationError("--circle needs a square --size, for example 64x64") }
                if format?.format == .jpeg { throw ValidationError("--circle needs a format with transparency: png or webp") }
            }
        } catch let error as ImageError {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        let userID = try UserID(user)
        let identityID = try identity.map { try IdentityID($0) }
        let manager = try storeOptions.open()
        let images = ImageManager(diskManager: manager, downloadManager: DownloadManager(manager: manager, remote: try StoreRemote.remote(for: manager)),
                                  callbackQueue: .global())
        do {
            let processor = try makeProcessor()
            var image: ProcessedImage?
            do {
                image = try await images.userAvatar(userID, identityID: identityID, processor: processor)
            } catch {
                // An unknown user or identity has no avatar either; anything else is a real failure.
                guard orDefault, error.code == .notAvailable else { throw error }
            }
            if image == nil, orDefault {
                let fallback = try ImageManager.defaultUserAvatar()
                image = try processor?.process(fallback) ?? fallback
            }
            guard let image else {
                throw CLIError(identityID.map { "identity '\($0)' of user '\(userID)' has no avatar" } ?? "user '\(userID)' has no avatar")
            }
            try ImageOutput.write(image.data, to: output)
        } catch let error as ImageError {
            throw CLIError(error.message)
        }
    }

    private func makeProcessor() throws(ImageError) -> ImageProcessor? {
        let output = try format.map { text throws(ImageError) in try OutputFormat(parsing: text) }
        guard let size else { return output.map { .encode(as: $0) } }
        let parsed = try ImageSize(parsing: size)
        if circle { return .circle(diameter: parsed.width, as: output ?? .png) }
        return .crop(toFill: parsed, as: output)
    }
}
