import ArgumentParser
import DarkDiskStore

/// `darkdisk pin` and `darkdisk unpin`: what they share.
struct PinTargets: ParsableArguments {
    @OptionGroup var storeOptions: StoreOptions

    @Option(help: ArgumentHelp("A node, by ID, instead of paths (needs no mount; a running mount acts on it).", valueName: "ID"))
    var node: [String] = []

    @Flag(help: "Also clear the pins set below each folder, so that everything in it follows it.")
    var recursive = false

    @Argument(help: ArgumentHelp("Files or folders on a darkdisk mount (under /files or /nodes).", valueName: "PATH"))
    var paths: [String] = []

    func validate() throws {
        if paths.isEmpty && node.isEmpty { throw ValidationError("say what: PATH… or --node ID") }
    }

    func apply(_ pinned: Bool) throws {
        for path in try paths.map(MountedPath.checked) {
            try path.set("user.darkdisk.pin", pinned ? "1" : "0")
            if recursive { for below in path.descendants() { try below.remove("user.darkdisk.pin") } }
        }
        guard !node.isEmpty else { return }
        let manager = try storeOptions.open()
        for id in try node.map(NodeID.init) { try manager.outline.setPin(pinned, on: id, clearingBelow: recursive) }
    }
}

struct PinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin",
        abstract: "Always keep files or folders on this device.",
        discussion: """
            A pinned file is downloaded in the background by the running mount, kept persistent (never \
            evicted), downloaded again when its remote copy changes, and readable offline. Pinning a folder \
            pins everything in it, now and later. Progress: getfattr -n user.darkdisk.local FILE, darkdisk status.
            """)

    @OptionGroup var targets: PinTargets

    func run() throws { try targets.apply(true) }
}

struct UnpinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unpin",
        abstract: "Let pinned files or folders be freed again.",
        discussion: "Their local copies move to the cache pool, where eviction may take them; a file whose change is not uploaded yet stays until it is.")

    @OptionGroup var targets: PinTargets

    func run() throws { try targets.apply(false) }
}
