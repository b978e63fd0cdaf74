import ArgumentParser
import DarkDiskStore
import DarkDiskCloud
import Foundation

struct PullCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pull",
        abstract: "Fetch the outline from the remote: new nodes appear (no data is downloaded), changed nodes drop their stale local copies, deleted nodes are deleted locally.",
        discussion: """
            A file kept persistently whose node changed is replaced, not dropped: the pull downloads its new \
            version and keeps it persistently (if that download fails, the next read on the mount or fetch \
            keeps it). A record that is malformed or names another node is skipped with one line on stderr \
            (the node keeps what this store had of it), the rest is pulled, and the exit status is 1. With \
            --expect-fingerprint (or after 'init --remote --expect-fingerprint', on the first pull), nothing \
            is pulled unless the remote serves the records that fingerprint covers ('darkdisk fingerprint').
            """)

    @OptionGroup var storeOptions: StoreOptions

    @OptionGroup var fingerprintOptions: ExpectedFingerprintOption

    // (Numbers are taken as given, a negative one too, so that its refusal says what is wrong with it.)
    @Option(parsing: .unconditional, help: ArgumentHelp("Give up after SECONDS with one line and exit status 1 when the remote answers too slowly or not at all (a request that gets no byte for that long, or a whole pull that takes longer).", valueName: "SECONDS"))
    var timeout: Double = 300

    @Flag(help: "Delete every local node if the remote lists none (refused by default: an empty listing is more often a wrong or unmounted bucket than a remote emptied on purpose).")
    var acceptEmptyRemote = false

    func validate() throws {
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be more than 0 and at most 86400 seconds") }
    }

    func run() async throws {
        let manager = try storeOptions.open()
        let limit = Duration.milliseconds(Int64(timeout * 1000))
        let remote = try StoreRemote.remote(for: manager, stallTimeout: limit)
        let sync = CloudSync(manager: manager, remote: remote)
        let acceptEmpty = acceptEmptyRemote, expected = fingerprintOptions.expectFingerprint
        let result = try await Deadline.run(limit, otherwise: CLIError("pull: \(remote.url) did not finish answering in \(Deadline.text(timeout)) s; the pull stopped (--timeout raises the limit)")) {
            try await sync.pull(acceptEmptyRemote: acceptEmpty, expectedFingerprint: expected)
        }
        for line in result.skipped { FileHandle.standardError.write(Data("darkdisk: skipped: \(line)\n".utf8)) }
        let skipped = result.skipped.isEmpty ? "" : ", \(result.skipped.count) skipped"
        print("pulled: \(result.added) new, \(result.changed) changed, \(result.deleted) deleted, \(result.unchanged) unchanged\(skipped)")
        let failed = try await replaceKeptVersions(manager, DownloadManager(manager: manager, remote: remote))
        // The rest is pulled, but a script must notice (as rsync's exit 23 for a partial transfer).
        if !result.skipped.isEmpty || failed > 0 { throw ExitCode(1) }
    }

    /// Downloads the new versions of kept files the pull replaced (the store keeps them persistently as
    /// they arrive); returns how many failed, each said in one line.
    private func replaceKeptVersions(_ manager: DiskManager, _ downloads: DownloadManager) async throws -> Int {
        let kept = try manager.outline.keptVersionsToReplace()
        guard !kept.isEmpty else { return 0 }
        var failed = 0
        for (id, kind) in kept {
            do {
                if kind == .data {
                    _ = try await downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true, storePersistently: true)).value
                } else {
                    _ = try await downloads.downloadNodeMeta(id, components: kind == .metadata ? .metadata : .thumbnail,
                                                             options: DownloadOptions(cacheToDiskManager: true)).value
                }
                // The new version has no such section: nothing is left to keep.
                if try await manager.files.storedFile(id, kind: kind) == nil { try await manager.files.makeNodeFilePersistent(false, nodeID: id, kind: kind) }
            } catch {
                failed += 1
                FileHandle.standardError.write(Data("darkdisk: the new \(kind.rawValue) of kept node '\(id)' did not download (\(error)); the next read or fetch keeps it\n".utf8))
            }
        }
        print("kept files replaced by their new versions: \(kept.count - failed) of \(kept.count)")
        return failed
    }
}
