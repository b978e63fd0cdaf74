import ArgumentParser
import Foundation

struct UnmountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unmount",
        abstract: "Unmount a darkdisk mount; the daemon then closes the store cleanly and exits.")

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: ArgumentHelp("Where the store is mounted.", valueName: "MOUNTPOINT"))
    var mountpoint: String

    func run() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/fusermount3")
        process.arguments = ["-u", mountpoint]
        let errors = Pipe()
        process.standardError = errors
        do { try process.run() } catch { throw CLIError("cannot run fusermount3: \(error.localizedDescription) (install the fuse3 package)") }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let line = text.split(separator: "\n").first.map(String.init) ?? "exit \(process.terminationStatus)"
            throw CLIError("cannot unmount \(mountpoint): \(line.replacingOccurrences(of: "/bin/fusermount3: ", with: ""))")
        }
    }
}
