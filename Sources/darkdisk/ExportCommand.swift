import ArgumentParser
import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskSystem
import Foundation

struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Decrypt a node's data, thumbnail or metadata to stdout or a file.",
        discussion: "Only authenticated bytes are written; a damaged file stops the export with an error. With -o the file appears only when complete.")

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: ArgumentHelp("The node to export.", valueName: "ID"))
    var node: String

    @Option(help: ArgumentHelp("Which section: data, thumbnail or metadata.", valueName: "KIND"))
    var kind: String = "data"

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to FILE instead of standard output ('-': standard output).", valueName: "FILE"))
    var output: String?

    func run() async throws {
        let id = try NodeID(node)
        let kind = try FileKind.parseNodeKind(kind)
        let output = self.output == "-" ? nil : self.output
        if output == nil { try StandardStreams.requireOutput() }
        let manager = try storeOptions.open()
        let (reader, section, owner) = try await locate(id, kind: kind, manager: manager)
        defer {
            // It owns the reader's file (a retain token, a temporary download). A download too large for the
            // pool is this command's alone: it goes before the process exits.
            withExtendedLifetime(owner) {}
            (owner as? NodeDataDownload)?.removeTemporaryFile()
        }
        if let output {
            try OutputFile.write(to: output) { fd in try copy(reader, section: section, to: fd, name: output) }
        } else {
            try copy(reader, section: section, to: STDOUT_FILENO, name: "standard output")
        }
    }

    /// A reader of the wanted section: the section's own file, else (metadata and thumbnail) the section of
    /// the node's local cloud file, else downloaded on demand from the remote; and what owns its file.
    private func locate(_ id: NodeID, kind: FileKind, manager: DiskManager) async throws -> (CryptoFileReader, Int, any Sendable) {
        func open(_ export: DiskExport, section: Int? = nil) throws -> (CryptoFileReader, Int, any Sendable) {
            let reader = try export.reader()
            return (reader, section ?? reader.dataSection, export)
        }
        let section: CloudFileSection = kind == .metadata ? .metadata : kind == .thumbnail ? .thumbnail : .data
        if let own = try await manager.files.nodeFile(id, kind: kind) { return try open(own) }
        if kind != .data, let whole = try await manager.files.nodeFile(id, kind: .data), whole.isRemoteVersion(of: try await manager.outline.entry(id)) {
            return try open(whole, section: section.rawValue)
        }
        guard try await manager.outline.entry(id) != nil else {
            throw CLIError("node '\(id)' has no \(kind.rawValue) stored locally, and the remote's outline does not have it (try 'darkdisk pull')")
        }
        let downloads = DownloadManager(manager: manager, remote: try StoreRemote.remote(for: manager))
        if kind == .data {
            let download = try await downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true)).value
            if let export = download.export { return try open(export) }
            // Larger than the data pool: the store keeps none of it, the export reads its temporary download.
            let reader = try CryptoFileReader(path: download.cryptoFile.path, key: download.cryptoFile.key)
            return (reader, reader.dataSection, download)
        }
        let component: NodeMetaComponents = kind == .metadata ? .metadata : .thumbnail
        _ = try await downloads.downloadNodeMeta(id, components: component, options: DownloadOptions(cacheToDiskManager: true)).value
        guard let fetched = try await manager.files.nodeFile(id, kind: kind) else { throw CLIError("node '\(id)' has no \(kind.rawValue)") }
        return try open(fetched)
    }

    /// Streams one section in 1 MiB authenticated pieces.
    private func copy(_ reader: CryptoFileReader, section: Int, to fd: Int32, name: String) throws {
        let size = reader.plaintextSize(ofSection: section)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var offset: UInt64 = 0
        while offset < size {
            let n: Int
            do {
                n = try reader.read(section: section, offset: offset, count: buffer.count, into: buffer)
            } catch {
                throw CLIError("node '\(node)' \(kind): \(error.message)")
            }
            guard n > 0 else { break }
            do { try SystemCall.write(fd, from: buffer.baseAddress!, count: n) } catch {
                throw CLIError("cannot write \(name): \(error)")
            }
            offset += UInt64(n)
        }
    }
}
