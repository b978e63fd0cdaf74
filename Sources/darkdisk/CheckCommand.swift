import ArgumentParser
import DarkDisk
import Foundation

struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check that the index and the files on disk agree (exit 1 and one line per problem if not).",
        discussion: """
            Every indexed file must be on disk with its recorded size and an authentic header (--full: every \
            chunk), and each pool's totals must equal its files. Cache files that vanished (the cache folder \
            may be purged at any time) and files no index row names (left by a crash; removed at the next \
            start) and staging files of interrupted imports (removed once untouched for ten minutes) are counted, not problems. Run it on a quiet store: an import in progress shows as an orphan.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Flag(help: "Read every file to the end, authenticating each chunk (slower).")
    var full = false

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func run() throws {
        let manager = try storeOptions.open()
        // The start-up sweep locks each staging file it looks at: let it finish, so none is missed.
        manager.waitForMaintenance()
        let result = try manager.check(full: full)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
        } else {
            for problem in result.problems { print("problem: \(problem)") }
            let authenticated = full ? ", \(result.authenticated) read and authenticated to the end" : ""
            print("\(result.files) files checked\(authenticated); \(result.vanishedCacheFiles) cache files vanished, "
                  + "\(result.orphans) orphans, \(result.stagingFiles) staging files left by interrupted imports (\(result.stagingBytes) bytes); "
                  + "\(result.isHealthy ? "healthy" : "\(result.problems.count) problems")")
        }
        if !result.isHealthy { throw ExitCode(1) }
    }
}
