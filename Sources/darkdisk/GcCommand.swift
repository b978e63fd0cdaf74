import ArgumentParser
import DarkDiskStore
import DarkDiskCloud
import Foundation

struct GcCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gc",
        abstract: "Delete the remote's cloud file versions that no record names any more, after a grace period.",
        discussion: """
            Every push writes a new, immutable version of a node's cloud file and then the record that names \
            it, so a machine still reading the previous version is never shown a mix. A version no record \
            names is deleted once this store has seen it so for the grace period (default an hour; the \
            first sightings are kept in the store, so the period spans runs). A node whose record does not \
            open keeps all its files. On S3 it also aborts multipart uploads of cloud files left unfinished \
            (an upload killed midway) once they are older than --upload-grace (default a day).
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: ArgumentHelp("Seconds an unnamed version is kept after this store first saw it (0: delete now).", valueName: "SECONDS"))
    var grace: Double = 3600

    @Option(help: ArgumentHelp("Seconds after its start an unfinished multipart upload is aborted (0: now; a live upload of another process would fail).", valueName: "SECONDS"))
    var uploadGrace: Double = 86_400

    func validate() throws {
        guard grace >= 0, grace.isFinite else { throw ValidationError("--grace must be 0 or more seconds") }
        guard uploadGrace >= 0, uploadGrace.isFinite else { throw ValidationError("--upload-grace must be 0 or more seconds") }
    }

    func run() async throws {
        let manager = try storeOptions.open()
        let result = try await CloudSync(manager: manager, remote: try StoreRemote.remote(for: manager)).collectGarbage(grace: grace, uploadGrace: uploadGrace)
        for node in result.skippedNodes {
            FileHandle.standardError.write(Data("darkdisk: node '\(node)': its record does not open; none of its files was touched\n".utf8))
        }
        print("deleted \(result.deleted.count) unnamed cloud file versions (\(result.deletedBytes) bytes); \(result.waiting) waiting out the grace period")
        if result.abortedUploads > 0 { print("aborted \(result.abortedUploads) unfinished uploads") }
        if !result.replacedRecords.isEmpty { print("deleted \(result.replacedRecords.count) records under node IDs that keyed records replaced") }
        if let failure = result.uploadCleanupFailure {
            FileHandle.standardError.write(Data("darkdisk: unfinished uploads were not cleaned up: \(failure)\n".utf8))
        }
    }
}
