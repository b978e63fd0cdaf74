import CFuse3
import DarkDisk
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A path on a darkdisk mount, acted on through the attributes the mount answers (DESIGN §5, §11): the
/// mount's daemon does the work (a pin's download, an eviction), whichever store it serves.
struct MountedPath {
    let path: String

    /// Sets attribute `name` to `value`; a refusal becomes one line naming the path.
    func set(_ name: String, _ value: String) throws {
        let result = value.withCString { setxattr(path, name, $0, strlen($0), 0) }
        if result != 0 { throw failure(errno, setting: name) }
    }

    /// Removes attribute `name` (nothing to remove is fine).
    func remove(_ name: String) throws {
        if removexattr(path, name) != 0, errno != ENODATA { throw failure(errno, setting: name) }
    }

    /// The attribute's value, if the path has it.
    func value(_ name: String) -> String? {
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = getxattr(path, name, &buffer, buffer.count)
        return count >= 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
    }

    /// Every entry below this folder (none for a file), deepest last.
    func descendants() -> [MountedPath] {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue,
              let walk = FileManager.default.enumerator(atPath: path) else { return [] }
        return walk.compactMap { ($0 as? String).map { MountedPath(path: path + "/" + $0) } }
    }

    private func failure(_ code: Int32, setting name: String) -> CLIError {
        switch code {
        case ENOENT: return CLIError("\(path): no such file or folder")
        case ENODATA, ENOTSUP:
            return CLIError("\(path) is not on a darkdisk mount, or \(name) does not apply to it (pin a file or folder under /files or /nodes)")
        case EBUSY:
            if value("user.darkdisk.pin") == "1" { return CLIError("\(path) is pinned; unpin it first (darkdisk unpin)") }
            return CLIError("\(path) has a change that is not uploaded yet; it stays until the upload (darkdisk push uploads now)")
        default: return CLIError("\(path): \(name): \(String(cString: strerror(code)))")
        }
    }
}
