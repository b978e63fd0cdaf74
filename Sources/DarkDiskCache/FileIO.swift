import Foundation
import DarkDiskSystem

/// The few POSIX file operations the cache needs, with `DiskCacheError` on failure.
enum FileIO {
    /// Opens `path` (close-on-exec, `EINTR` retried); a failure says `what` failed on the path.
    static func open(_ path: String, _ flags: Int32, mode: mode_t = 0, failing what: String) throws(DiskCacheError) -> OwnedDescriptor {
        do { return try OwnedDescriptor.open(path, flags, mode: mode) } catch {
            throw DiskCacheError.posix(what, path: path, errno: error.rawValue)
        }
    }

    /// Writes all of `data` to `file`.
    static func writeAll(_ file: OwnedDescriptor, _ data: Data, path: String) throws(DiskCacheError) {
        let failure = data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Errno? in
            guard buffer.count > 0 else { return nil }
            do throws(Errno) { try file.write(from: buffer.baseAddress!, count: buffer.count) } catch { return error }
            return nil
        }
        if let failure { throw DiskCacheError.posix("cannot write", path: path, errno: failure.rawValue) }
    }

    /// Reads exactly `count` bytes from the start of `file`; `nil` if the file is shorter or longer.
    static func readExactly(_ file: OwnedDescriptor, count: Int) -> Data? {
        guard let buffer = malloc(max(count, 1)) else { return nil }
        guard (try? file.read(into: buffer, count: count)) == count else { free(buffer); return nil }
        // One more byte would mean the file grew: not the value that was stored.
        var extra: UInt8 = 0
        if (try? file.read(into: &extra, count: 1)) != 0 { free(buffer); return nil }
        return Data(bytesNoCopy: buffer, count: count, deallocator: .free)
    }

    /// The bytes a file occupies on disk (its allocated blocks), what `DiskCache.byteCount` counts.
    static func allocatedSize(_ file: OwnedDescriptor) -> Int64 {
        guard let info = try? file.stat() else { return 0 }
        return Int64(info.st_blocks) * 512
    }

    /// 16 random hex digits for unique file names.
    static func randomName() -> String {
        let value = UInt64.random(in: .min ... .max)
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
