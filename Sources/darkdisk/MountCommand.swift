import ArgumentParser
import DarkDisk
import DarkDiskCloud
import DarkDiskFS
import Foundation

struct MountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mount",
        abstract: "Mount the store at MOUNTPOINT: /files (the drive, by name, writable), /nodes/<id>/data, /nodes/<id>/metadata, /nodes/<id>/thumbnail, /thumbs/<id>, /avatars/<user>/<identity>.",
        discussion: """
            Returns once the mount is in place and keeps serving in the background, logging to the store's \
            darkdisk.log; --foreground stays attached and logs to stderr. Nodes of the remote's outline \
            (see 'darkdisk pull') are listed and read on demand: a read downloads what it needs first. Creates the store on first use. \
            Stop with 'darkdisk unmount MOUNTPOINT', 'fusermount3 -u MOUNTPOINT', SIGINT or SIGTERM.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: ArgumentHelp("A directory (created if missing; its parent must exist). Files already in it are hidden while mounted.", valueName: "MOUNTPOINT"))
    var mountpoint: String

    @Flag(help: "Stay in the foreground and log to stderr.")
    var foreground = false

    @Option(name: .customShort("o"), help: ArgumentHelp("A mount option: allow_other, allow_root, auto_unmount, noatime, nodev, nosuid, noexec, dirsync, sync, async, max_read=N (repeatable, comma-separated; allow_other and allow_root exclude each other).", valueName: "OPTION"))
    var options: [String] = []

    @Option(help: ArgumentHelp("How long a read of a node that is only in the remote waits for its bytes before it fails with an I/O error.", valueName: "SECONDS"))
    var remoteTimeout: Double = 30

    @Option(help: ArgumentHelp("Pull the remote's outline every SECONDS while mounted, so what other machines push appears (0: never; 'darkdisk pull' still works).", valueName: "SECONDS"))
    var pollInterval: Double = 60

    @Option(help: ArgumentHelp("Upload a change once it has rested SECONDS (a file written again meanwhile waits again, so a burst of writes, an editor's saves or a 'tar x', uploads once and after the work; 0: at once).", valueName: "SECONDS"))
    var writeBack: Double = 5

    @Option(help: .hidden)
    var readyFd: Int32?

    func validate() throws {
        guard remoteTimeout > 0, remoteTimeout <= 86_400 else { throw ValidationError("--remote-timeout must be more than 0 and at most 86400 seconds") }
        guard pollInterval == 0 || (pollInterval >= 0.5 && pollInterval <= 86_400) else {
            throw ValidationError("--poll-interval must be 0 (off) or between 0.5 and 86400 seconds")
        }
        guard writeBack >= 0, writeBack <= 86_400 else { throw ValidationError("--write-back must be between 0 and 86400 seconds") }
    }

    func run() throws {
        let mountOptions: [String]
        do { mountOptions = try MountOptions.parse(options) } catch { throw CLIError(error.description) }
        let path = URL(fileURLWithPath: mountpoint).standardizedFileURL.path
        // Refuse to stack a second mount (and daemon) here. The daemon skips this: its parent just checked.
        if readyFd == nil, let mounted = MountTable.top(at: MountTable.resolve(path)) {
            let advice = mounted.isDarkdisk ? "darkdisk unmount \(mountpoint) first" : "a \(mounted.fileSystemType) mount; choose another directory"
            throw CLIError("\(mountpoint) is already a mount point (\(advice))")
        }
        if !foreground {
            // Make the store (and surface key problems) here, where the user sees the error.
            _ = try storeOptions.open(create: true)
            try DaemonLauncher.launch(location: storeOptions.location)
            return
        }
        if let readyFd { DaemonLauncher.keepReadyFdPrivate(readyFd) }
        let logger = CLILog.make(label: "darkdisk.mount", defaultLevel: .info)
        do {
            let manager = try storeOptions.open(create: true, logger: logger)
            let downloads = DownloadManager(manager: manager, remote: try StoreRemote.remote(for: manager))
            // `darkdisk status` lists what the daemon is downloading.
            let board = TransferBoard(downloads: downloads)
            defer { board.stop() }
            // Whether the remote answers (DESIGN §11): reads fail at once while it does not, and its return
            // drains the queue and resumes pinned downloads.
            let health = RemoteHealth(remote: downloads.remote, manager: manager, logger: logger)
            // What other machines push appears without a command (the store's own folder needs no polling).
            let poller = try pollInterval > 0 && !StoreRemote.url(for: manager).isDefault
                ? RemotePoller(sync: CloudSync(manager: manager, remote: downloads.remote), interval: pollInterval, health: health, logger: logger) : nil
            defer { poller?.stop() }
            // The upload queue drains in the background (and a pull follows the daemon's own uploads).
            let uploader = QueueUploader(sync: CloudSync(manager: manager, remote: downloads.remote), writeBack: writeBack,
                                         pullAfterUploads: try !StoreRemote.url(for: manager).isDefault, health: health, logger: logger)
            defer { uploader.stop() }
            // Pinned files are downloaded and kept (DESIGN §11), also those pinned while no mount ran.
            let pins = PinKeeper(manager: manager, downloads: downloads, health: health, logger: logger)
            defer { pins.stop() }
            let fileSystem = FuseFileSystem(manager: manager, downloads: downloads, pins: pins, health: health,
                                            remoteTimeout: .milliseconds(Int64(remoteTimeout * 1000)), logger: logger)
            try fileSystem.run(mountpoint: path, options: mountOptions) {
                if let readyFd { DaemonLauncher.signalReady(fd: readyFd) }
            }
        } catch {
            if let readyFd { DaemonLauncher.signalFailure(fd: readyFd, message: "\(error)") }
            throw error
        }
    }
}
