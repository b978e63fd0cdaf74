import DarkDiskStore
import DarkDiskTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A temporary folder with a store in it, driven through the real `darkdisk` binary.
final class CLIStore {
    let directory: String
    var storePath: String { directory + "/store" }

    init() throws {
        directory = NSTemporaryDirectory() + "darkdisk-cli-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `darkdisk ARGS --store STORE`.
    @discardableResult
    func darkdisk(_ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:]) throws -> Run {
        try Shell.run(Shell.darkdisk, arguments + ["--store", storePath], stdin: stdin, environment: environment)
    }

    /// `darkdisk`, waiting without holding a thread.
    @discardableResult
    func darkdisk(_ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:]) async throws -> Run {
        try await Shell.run(Shell.darkdisk, arguments + ["--store", storePath], stdin: stdin, environment: environment)
    }

    /// Writes `data` to a private (0600) file in the temporary folder and returns its path: passphrase files
    /// others can read are refused, as the key file is.
    func file(_ name: String, _ data: Data) throws -> String {
        let path = directory + "/" + name
        try data.write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        return path
    }

    /// The same store through the library (the CLI and the daemon may have it open at the same time).
    func manager() throws -> DiskManager {
        try DiskManager(location: StoreLocation(directory: storePath))
    }

    /// The name node `id`'s objects have in the bucket (`records/NAME.rec`, `nodes/NAME/`), as `darkdisk
    /// locate` prints it: keyed by the master key, so the test asks the store.
    func objectName(_ id: String, passphrase: String? = nil) throws -> String {
        let run = try darkdisk(["locate", "--node", id] + (passphrase.map { ["--passphrase-file", $0] } ?? []))
        guard run.status == 0, let line = run.output.split(separator: "\n").first, line.hasPrefix("records/"), line.hasSuffix(".rec") else {
            throw RemoteBucket.SetupFailed(message: "darkdisk locate --node \(id): \(run.stderr) \(run.output)")
        }
        return String(line.dropFirst("records/".count).dropLast(".rec".count))
    }

    static func bytes(_ count: Int, seed: UInt64 = 1) -> Data {
        Data(SplitMix64.bytes(count, seed: seed))
    }
}
