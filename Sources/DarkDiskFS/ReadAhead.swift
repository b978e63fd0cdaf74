import Foundation

/// Raises the kernel's readahead window for a FUSE mount. The kernel caps FUSE readahead at the backing
/// device's `read_ahead_kb` (128 KiB by default), whatever `max_readahead` the file system asks for; a
/// larger window means fewer, larger read requests for `cat` and `cp`. Needs root; otherwise a no-op.
enum ReadAhead {
    /// Finds the mount's device in /proc/self/mountinfo (no request to the not-yet-serving mount) and
    /// writes `kilobytes` to /sys/class/bdi/MAJOR:MINOR/read_ahead_kb. Returns whether it worked.
    @discardableResult
    static func raise(mountpoint: String, kilobytes: Int) -> Bool {
        guard let mountinfo = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return false }
        // Fields: id parent major:minor root mountpoint ...; the last matching line is the newest mount.
        let device = mountinfo.split(separator: "\n").last { line in
            let fields = line.split(separator: " ")
            return fields.count > 4 && fields[4] == mountpoint
        }?.split(separator: " ")[2]
        guard let device else { return false }
        let path = "/sys/class/bdi/\(device)/read_ahead_kb"
        return (try? "\(kilobytes)\n".write(toFile: path, atomically: false, encoding: .utf8)) != nil
    }
}
