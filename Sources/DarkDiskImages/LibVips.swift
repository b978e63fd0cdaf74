import CVips
import Foundation

/// libvips, started once per process (thread-safe: a `static let` initialiser runs exactly once).
///
/// The operation cache is turned off: darkdisk never repeats an operation on the same pixels (the memory
/// caches above keep results), and a cached `thumbnail_buffer` would keep references to buffers that Swift
/// has already freed. With no cache, memory stays flat however many images go through.
enum LibVips {
    private static let started: String? = {
        guard darkdisk_vips_init("darkdisk") == 0 else { return lastError() }
        darkdisk_vips_cache_off()
        return nil
    }()

    /// Starts libvips if needed; throws if it cannot start.
    static func start() throws(ImageError) {
        if let failure = started {
            throw ImageError(.processing, "libvips failed to start: \(failure)")
        }
    }

    /// libvips' error buffer (global to the process), first line only, then cleared.
    static func lastError() -> String {
        guard let buffer = darkdisk_vips_error_buffer() else { return "unknown libvips error" }
        let text = String(cString: buffer)
        darkdisk_vips_error_clear()
        let line = text.split(separator: "\n").first.map(String.init) ?? ""
        return line.isEmpty ? "unknown libvips error" : line
    }
}
