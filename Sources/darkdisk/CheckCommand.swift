import ArgumentParser
import DarkDiskStore
import DarkDiskCloud
import Foundation

struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check that the index and the files on disk agree, and with --remote the remote's records and files (exit 1 and one line per problem if not).",
        discussion: """
            Every indexed file must be on disk with its recorded size and an authentic header (--full: every \
            chunk), and each pool's totals must equal its files. Cache files that vanished (the cache folder \
            may be purged at any time) and files no index row names (left by a crash; removed at the next \
            start) and staging files of interrupted imports (removed once untouched for ten minutes) are counted, not problems. Run it on a quiet store: an import in progress shows as an orphan.

            --remote also reads every node record and user record of the remote and every file they name, \
            to the end: each record must open (records are sealed with the store's key) and be no older \
            than the one this store applied, and each cloud file and avatar must be there, be the file its \
            record names (its file ID and sizes) and authenticate, header and every chunk. Objects no record names are listed as \
            orphans, not problems. Shows a progress bar on a terminal.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Flag(help: "Read every file to the end, authenticating each chunk (slower).")
    var full = false

    @Flag(help: "Also authenticate every record and every file it names in the remote (downloads them all).")
    var remote = false

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func run() async throws {
        let manager = try storeOptions.open()
        // The start-up sweep locks each staging file it looks at: let it finish, so none is missed.
        manager.files.waitForMaintenance()
        let result = try manager.check(full: full)
        var remoteResult: RemoteCheckResult?
        if remote {
            let bar = isatty(STDERR_FILENO) == 1 ? ProgressBar() : nil
            defer { bar?.finish() }
            remoteResult = try await CloudSync(manager: manager, remote: try StoreRemote.remote(for: manager)).checkRemote { bar?.show($0) }
        }
        if json {
            struct Report: Encodable {
                let local: StoreCheck
                let remote: RemoteCheckResult?
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            let data = remoteResult == nil ? try encoder.encode(result) : try encoder.encode(Report(local: result, remote: remoteResult))
            print(String(decoding: data, as: UTF8.self))
        } else {
            for problem in result.problems { print("problem: \(problem)") }
            let authenticated = full ? ", \(result.authenticated) read and authenticated to the end" : ""
            print("\(result.files) files checked\(authenticated); \(result.vanishedCacheFiles) cache files vanished, "
                  + "\(result.orphans) orphans, \(result.stagingFiles) staging files left by interrupted imports (\(result.stagingBytes) bytes); "
                  + "\(result.isHealthy ? "healthy" : "\(result.problems.count) problems")")
            if let remoteResult {
                for problem in remoteResult.problems { print("problem: remote: \(problem)") }
                for orphan in remoteResult.orphans { print("orphan: remote: \(orphan)") }
                print("remote: \(remoteResult.records) records, \(remoteResult.files) files (\(remoteResult.bytes) bytes) read and authenticated to the end; "
                      + "\(remoteResult.orphans.count) orphans; \(remoteResult.isHealthy ? "healthy" : "\(remoteResult.problems.count) problems")")
            }
        }
        if !result.isHealthy || remoteResult?.isHealthy == false { throw ExitCode(1) }
    }
}
