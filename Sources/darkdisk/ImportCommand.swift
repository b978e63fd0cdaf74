import ArgumentParser
import DarkDiskStore
import Foundation

struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Encrypt a file (or stdin) into the store as a node's data, thumbnail or metadata, or as a user's avatar.",
        discussion: "Files are cache files (evictable, expiring) unless --persistent is given, as in ZeroDark.cloud's framework. Creates the store on first use.")

    @OptionGroup var targetOptions: TargetOptions

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: ArgumentHelp("The plaintext file, or - for standard input.", valueName: "FILE|-"))
    var file: String

    @Flag(help: "Keep the file until it is deleted instead of in the pool's cache.")
    var persistent = false

    @Option(parsing: .unconditional, help: ArgumentHelp("Cache files: seconds after import before the file expires (0: the pool's default, negative: never).", valueName: "SECONDS"))
    var expiration: Int = 0

    @Flag(help: "Keep the file persistent until it is uploaded, then make it a cache file.")
    var migrateAfterUpload = false

    @Flag(help: "Delete the file once it is uploaded.")
    var deleteAfterUpload = false

    @Option(help: ArgumentHelp("Plaintext bytes per encrypted chunk (a power of two from 4096 to 4194304; for tuning).", valueName: "BYTES", visibility: .hidden))
    var chunkSize: UInt32?

    func run() throws {
        let target = try targetOptions.target()
        if case .avatar = target, migrateAfterUpload || deleteAfterUpload {
            // Avatars are uploaded by 'push --user', which has no upload hooks: say so rather than ignore them.
            throw CLIError("--\(migrateAfterUpload ? "migrate-after-upload" : "delete-after-upload") is for nodes; an avatar has no upload hooks")
        }

        let source: DiskImport.Source
        var input: FileHandle?
        if file == "-" {
            source = .cleartextStream(fileDescriptor: FileHandle.standardInput.fileDescriptor)
        } else {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) else {
                throw CLIError("cannot read \(file): no such file")
            }
            guard !isDirectory.boolValue else { throw CLIError("cannot import \(file): it is a directory") }
            guard let handle = FileHandle(forReadingAtPath: file) else { throw CLIError("cannot read \(file): permission denied") }
            input = handle
            source = .cleartextStream(fileDescriptor: handle.fileDescriptor)
        }
        defer { try? input?.close() }

        var diskImport = DiskImport(source)
        diskImport.storePersistently = persistent || migrateAfterUpload
        diskImport.expiration = Double(expiration)
        diskImport.migrateToCacheAfterUpload = migrateAfterUpload
        diskImport.deleteAfterUpload = deleteAfterUpload
        if let chunkSize { diskImport.chunkSize = chunkSize }
        diskImport.sourceName = file == "-" ? "standard input" : file

        let manager = try storeOptions.open(create: true)
        do {
            _ = try Self.store(diskImport, as: target, in: manager)
        } catch let error as DarkDiskError where error.code == .tooLarge {
            throw CLIError("\(error.message): import it with --persistent, or raise pool.\(target.pool.rawValue).max_size")
        }
    }

    private static func store(_ diskImport: DiskImport, as target: FileTarget, in manager: DiskManager) throws -> DiskExport {
        switch target {
        case .node(let id, let kind):
            return try manager.importNodeFile(diskImport, nodeID: id, kind: kind)
        case .avatar(let user, let identity?):
            return try manager.importUserAvatar(diskImport, userID: user, identityID: identity)
        case .avatar(_, nil):
            preconditionFailure("FileTarget.parse requires an identity here")
        }
    }
}
