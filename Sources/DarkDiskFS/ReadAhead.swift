import Foundation

/// Raises the kernel's readahead window for a FUSE mount. The kernel caps FUSE readahead at the backing
/// device's `read_ahead_kb` (128 KiB by default), whatever `max_readahead` the file system asks for; a
/// larger window means fewer, larger read requests for `cat` and `cp`. Needs root; otherwise a no-op.
enum ReadAhead {
    /// Writes `kilobytes` to /sys/class/bdi/MAJOR:MINOR/read_ahead_kb of the mount at `resolvedMountpoint`
    /// (as `MountTable.resolve` gave it before mounting: resolving it now would ask the not-yet-serving
    /// mount). Returns whether it worked.
    @discardableResult
    static func raise(resolvedMountpoint: String, kilobytes: Int) -> Bool {
        guard let device = MountTable.top(at: resolvedMountpoint)?.device else { return false }
        let path = "/sys/class/bdi/\(device)/read_ahead_kb"
        return (try? "\(kilobytes)\n".write(toFile: path, atomically: false, encoding: .utf8)) != nil
    }
}
