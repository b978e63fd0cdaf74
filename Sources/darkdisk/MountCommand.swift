import ArgumentParser
import DarkDiskStore
import DarkDiskCloud
import DarkDiskFS
import DarkDiskSystem
import Foundation
import Logging

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

    // (Numbers are taken as given, a negative one too, so that its refusal says what is wrong with it.)
    @Option(parsing: .unconditional, help: ArgumentHelp("How long a read of a node that is only in the remote waits for its bytes before it fails with an I/O error; also how long a request to an http or s3 remote may go without a byte before the remote counts as offline.", valueName: "SECONDS"))
    var remoteTimeout: Double = 30

    @Option(parsing: .unconditional, help: ArgumentHelp("Pull the remote's outline every SECONDS while mounted, so what other machines push appears (0: never; 'darkdisk pull' still works).", valueName: "SECONDS"))
    var pollInterval: Double = 60

    @Option(parsing: .unconditional, help: ArgumentHelp("Upload changes once the drive has rested SECONDS, with no change anywhere for that long (a burst of writes, an editor's saves, a 'tar x' or a 'cp -a', uploads once and after the work; a drive written without a pause still uploads what waited 12 times SECONDS; 0: at once).", valueName: "SECONDS"))
    var writeBack: Double = 5

    @Option(parsing: .unconditional, help: ArgumentHelp("On SIGTERM or unmount, upload the queued changes for at most SECONDS before stopping (what is left stays queued for the next mount; 0: none).", valueName: "SECONDS"))
    var stopTimeout: Double = 20

    @Option(help: .hidden)
    var readyFd: Int32?

    func validate() throws {
        guard remoteTimeout > 0, remoteTimeout <= 86_400 else { throw ValidationError("--remote-timeout must be more than 0 and at most 86400 seconds") }
        guard pollInterval == 0 || (pollInterval >= 0.5 && pollInterval <= 86_400) else {
            throw ValidationError("--poll-interval must be 0 (off) or between 0.5 and 86400 seconds")
        }
        guard writeBack >= 0, writeBack <= 86_400 else { throw ValidationError("--write-back must be between 0 and 86400 seconds") }
        guard stopTimeout >= 0, stopTimeout <= 3600 else { throw ValidationError("--stop-timeout must be between 0 and 3600 seconds") }
    }

    func run() throws {
        let mountOptions: [String]
        do { mountOptions = try MountOptions.parse(options) } catch { throw CLIError(error.description) }
        let path = URL(fileURLWithPath: mountpoint).standardizedFileURL.path
        // Refuse to stack a second mount (and daemon) here. The daemon skips this: its parent just checked.
        // (An automount point systemd put there first is what an fstab line with x-systemd.automount mounts over.)
        if readyFd == nil, let mounted = MountTable.top(at: MountTable.resolve(path)), mounted.fileSystemType != "autofs" {
            let advice = mounted.isDarkdisk ? "darkdisk unmount \(mountpoint) first" : "a \(mounted.fileSystemType) mount; choose another directory"
            throw CLIError("\(mountpoint) is already a mount point (\(advice))")
        }
        if !foreground {
            // Make the store (and surface key problems) here, where the user sees the error.
            _ = try storeOptions.open(create: true)
            // One mount per store: a second is refused here, in one line naming the first (the daemon checks
            // again as it takes the lock).
            if case .held(let holder) = MountLock.state(storeOptions.location), MountLock.isServing(holder) {
                throw MountLock.alreadyMounted(holder)
            }
            try DaemonLauncher.launch(location: storeOptions.location)
            return
        }
        if let readyFd { DaemonLauncher.keepReadyFdPrivate(readyFd) }
        // (Each open file and each prepared new file holds a descriptor; a commit waiting for the index holds none.)
        DescriptorLimit.raiseToHard()
        let logger = CLILog.make(label: "darkdisk.mount", defaultLevel: .info)
        do {
            let manager = try storeOptions.open(create: true, logger: logger)
            let lock = try MountLock(storeOptions.location, mountpoint: path)
            defer { lock.release() }
            let downloads = DownloadManager(manager: manager, remote: try StoreRemote.remote(for: manager, stallTimeout: .milliseconds(Int64(remoteTimeout * 1000))))
            // `darkdisk status` lists what the daemon is downloading.
            let board = TransferBoard(downloads: downloads)
            defer { board.stop() }
            // Whether the remote answers: reads fail at once while it does not, and its return
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
            // Pinned files are downloaded and kept, also those pinned while no mount ran.
            let pins = PinKeeper(manager: manager, downloads: downloads, health: health, logger: logger)
            defer { pins.stop() }
            let fileSystem = FuseFileSystem(manager: manager, downloads: downloads, pins: pins, health: health,
                                            remoteTimeout: .milliseconds(Int64(remoteTimeout * 1000)), logger: logger)
            try fileSystem.run(mountpoint: path, options: mountOptions) {
                if let readyFd {
                    DaemonLauncher.detach()
                    DaemonLauncher.signalReady(fd: readyFd)
                }
                // A `Type=notify` unit is started once the mount serves.
                SystemdNotify.send("READY=1\nSTATUS=serving \(path)")
            }
            SystemdNotify.send("STOPPING=1")
            // Unmounted: the store may be mounted again at once (what is left here is uploading, as `sync` may).
            lock.release()
            // (An upload still running after that, a large file's, would meet a second drain's claim of it.)
            if uploader.stopAndWait(timeout: 5) {
                uploadBeforeStopping(CloudSync(manager: manager, remote: downloads.remote), logger: logger)
            }
        } catch {
            if let readyFd { DaemonLauncher.signalFailure(fd: readyFd, message: "\(error)") }
            throw error
        }
    }

    /// Uploads what is queued, for at most `--stop-timeout` seconds; what is left stays queued.
    private func uploadBeforeStopping(_ sync: CloudSync, logger: Logger) {
        guard stopTimeout > 0, let queued = try? sync.manager.uploadQueue.all().count, queued > 0 else { return }
        logger.info("uploading \(queued) queued change\(queued == 1 ? "" : "s") before stopping (at most \(Int(stopTimeout)) s)")
        let done = DispatchSemaphore(value: 0)
        let task = Task.detached {
            defer { done.signal() }
            return try? await sync.drainQueue()
        }
        if done.wait(timeout: .now() + stopTimeout) == .timedOut {
            task.cancel()
            done.wait()
        }
        let left = (try? sync.manager.uploadQueue.all().count) ?? 0
        if left > 0 { logger.notice("\(left) change\(left == 1 ? "" : "s") left queued for the next mount or 'darkdisk sync'") }
    }
}
