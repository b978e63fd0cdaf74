import DarkDiskSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The mounts of this process' mount namespace, from /proc/self/mountinfo (read without a request to any
/// mount, so it is safe on a mount that is not serving yet).
package enum MountTable {
    package struct Entry: Sendable {
        /// `MAJOR:MINOR`, the name of the mount's backing device under /sys/class/bdi.
        package let device: String
        package let fileSystemType: String
        /// `fuse.darkdisk`: the mount sets subtype=darkdisk (and fsname=darkdisk) itself.
        package var isDarkdisk: Bool { fileSystemType == "fuse.darkdisk" }
    }

    /// `path` absolute with symbolic links resolved (as the kernel lists mount points), or only made
    /// absolute when that fails (a missing path, or a dead FUSE mount that answers ENOTCONN).
    package static func resolve(_ path: String) -> String {
        if let resolved = realpath(path, nil) {
            defer { free(resolved) }
            return String(cString: resolved)
        }
        return URL(fileURLWithPath: path).standardizedFileURL.path
    }

    /// The mount that `path` (followed, as `stat` does) lies on, found by its device; nil when no listed
    /// mount has its device. Throws why `path` cannot be looked at.
    package static func mount(containing path: String) throws(Errno) -> Entry? {
        var st = stat()
        guard stat(path, &st) == 0 else { throw Errno.current }
        // (glibc's `major`/`minor` are macros Swift does not see: their bit layout, spelt out.)
        let major = UInt32(truncatingIfNeeded: (st.st_dev >> 8) & 0xfff) | UInt32(truncatingIfNeeded: (st.st_dev >> 32) & ~0xfff)
        let minor = UInt32(truncatingIfNeeded: st.st_dev & 0xff) | UInt32(truncatingIfNeeded: (st.st_dev >> 12) & ~0xff)
        return mount(ofDevice: "\(major):\(minor)")
    }

    /// The mount whose file system is device `device` (`MAJOR:MINOR`), if one is listed.
    private static func mount(ofDevice device: String) -> Entry? {
        guard let bytes = try? SystemCall.readWhole("/proc/self/mountinfo") else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count > 7, fields[2] == device, let dash = fields[6...].firstIndex(of: "-"), dash + 1 < fields.count else { continue }
            return Entry(device: String(fields[2]), fileSystemType: String(fields[dash + 1]))
        }
        return nil
    }

    /// The mount on top at `path` (the last one listed there), if `path` is a mount point.
    package static func top(at path: String) -> Entry? {
        guard let bytes = try? SystemCall.readWhole("/proc/self/mountinfo") else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        var found: Entry?
        for line in text.split(separator: "\n") {
            // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPEROPTIONS
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count > 7, let dash = fields[6...].firstIndex(of: "-"), dash + 1 < fields.count,
                  unescape(fields[4]).utf8.elementsEqual(path.utf8) else { continue }
            found = Entry(device: String(fields[2]), fileSystemType: String(fields[dash + 1]))
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
