import ArgumentParser
import DarkDiskFS
import Foundation

struct UnmountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unmount",
        abstract: "Unmount a darkdisk mount; the daemon then closes the store cleanly and exits.",
        discussion: """
            If files on the mount are still open, the mount is detached at once (lazily: new opens fail, \
            open files keep reading) and the daemon exits when the last one is closed.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: ArgumentHelp("Where the store is mounted.", valueName: "MOUNTPOINT"))
    var mountpoint: String

    func run() throws {
        // Only a darkdisk mount: as root, fusermount3 -u would unmount anything (a tmpfs, a disk).
        let path = MountTable.resolve(mountpoint)
        guard let mount = MountTable.top(at: path) else { throw CLIError("cannot unmount \(mountpoint): it is not mounted") }
        guard mount.isDarkdisk else {
            throw CLIError("cannot unmount \(mountpoint): it is a \(mount.fileSystemType) mount, not darkdisk")
        }
        let plain = try fusermount(["-u", path])
        guard plain.status != 0 else { return }
        guard plain.message.contains("busy") else {
            throw CLIError("cannot unmount \(mountpoint): \(plain.message)")
        }
        let lazy = try fusermount(["-u", "-z", path])
        guard lazy.status == 0 else { throw CLIError("cannot unmount \(mountpoint): \(lazy.message)") }
        print("\(mountpoint): files are still open; detached, the daemon exits when the last one is closed")
    }

    /// Runs fusermount3 and returns its exit status and the first line it printed on stderr.
    private func fusermount(_ arguments: [String]) throws -> (status: Int32, message: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/fusermount3")
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        do { try process.run() } catch { throw CLIError("cannot run fusermount3: \(error.localizedDescription) (install the fuse3 package)") }
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let line = text.split(separator: "\n").first.map(String.init) ?? "exit \(process.terminationStatus)"
        return (process.terminationStatus, line.replacingOccurrences(of: "/bin/fusermount3: ", with: ""))
    }
}
