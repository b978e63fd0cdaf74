import ArgumentParser
import Foundation
#if canImport(Glibc)
import Glibc
#endif

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

/// The mounts of this process' mount namespace, from /proc/self/mountinfo.
enum MountTable {
    struct Entry {
        let fileSystemType: String
        /// `fuse.darkdisk`: the mount sets subtype=darkdisk (and fsname=darkdisk) itself.
        var isDarkdisk: Bool { fileSystemType == "fuse.darkdisk" }
    }

    /// `path` absolute with symbolic links resolved (as the kernel lists mount points), or only made
    /// absolute when that fails (a missing path, or a dead FUSE mount that answers ENOTCONN).
    static func resolve(_ path: String) -> String {
        if let resolved = realpath(path, nil) {
            defer { free(resolved) }
            return String(cString: resolved)
        }
        return URL(fileURLWithPath: path).standardizedFileURL.path
    }

    /// The mount on top at `path` (the last one listed there), if `path` is a mount point.
    static func top(at path: String) -> Entry? {
        guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return nil }
        var found: Entry?
        for line in text.split(separator: "\n") {
            // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPEROPTIONS
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count > 7, let dash = fields[6...].firstIndex(of: "-"), dash + 1 < fields.count,
                  unescape(fields[4]).utf8.elementsEqual(path.utf8) else { continue }
            found = Entry(fileSystemType: String(fields[dash + 1]))
        }
        return found
    }

    /// Undoes the kernel's octal escapes (`\040` space, `\011` tab, `\012` newline, `\134` backslash).
    static func unescape(_ field: Substring) -> String {
        let bytes = Array(field.utf8)
        var result: [UInt8] = []
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "\\"), i + 3 < bytes.count,
               let value = UInt8(String(decoding: bytes[(i + 1)...(i + 3)], as: UTF8.self), radix: 8) {
                result.append(value)
                i += 4
            } else {
                result.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }
}
