import ArgumentParser
import DarkDiskStore
import Foundation

struct EvictCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evict",
        abstract: "Drop the local copies of synced files now, to free space.",
        discussion: """
            The files stay in the drive and in the remote; reading one downloads it again. A folder evicts \
            every file below it. A file whose change is not uploaded yet, or that is pinned, is kept (one line \
            says so, and the exit status is 1).
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: ArgumentHelp("A node, by ID, instead of paths.", valueName: "ID"))
    var node: [String] = []

    @Argument(help: ArgumentHelp("Files or folders on a darkdisk mount.", valueName: "PATH"))
    var paths: [String] = []

    func validate() throws {
        if paths.isEmpty && node.isEmpty { throw ValidationError("say what: PATH… or --node ID") }
    }

    func run() throws {
        var kept: [String] = []
        for path in try paths.map(MountedPath.checked) {
            let files = path.isFolder ? path.descendants().filter(\.isFile) : [path]
            for file in files {
                do { try file.set("user.darkdisk.local", "none") } catch { kept.append("\(error)") }
            }
        }
        if !node.isEmpty {
            let manager = try storeOptions.open()
            for id in try node.map(NodeID.init) {
                do { try manager.outline.evictNodeData(id) } catch { kept.append(error.message + (error.code == .busy ? " (darkdisk push uploads now; darkdisk unpin frees a pin)" : "")) }
            }
        }
        for line in kept.dropLast() { FileHandle.standardError.write(Data("darkdisk: \(line)\n".utf8)) }
        if let last = kept.last { throw CLIError(last) }
    }
}
