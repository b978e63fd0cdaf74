import CFuse3
import DarkDiskStore
import DarkDiskFS
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A path on a darkdisk mount, acted on through the attributes the mount answers: the
/// mount's daemon does the work (a pin's download, an eviction), whichever store it serves.
struct MountedPath {
    let path: String

    /// `path`, checked to be on a darkdisk mount: anything else is refused in one line (an ordinary file
    /// would take `user.darkdisk.*` attributes as any others and mean nothing by them).
    static func checked(_ path: String) throws -> MountedPath {
        let mount: MountTable.Entry?
        do { mount = try MountTable.mount(containing: path) } catch {
            throw CLIError("\(path): \(error.rawValue == ENOENT ? "no such file or folder" : "\(error)")")
        }
        guard mount?.isDarkdisk == true else {
            throw CLIError("\(path) is not on a darkdisk mount (pin, unpin and evict act on files and folders under a mount's /files or /nodes)")
        }
        return MountedPath(path: path)
    }

    /// Whether the path is a folder (itself: a link to one is not followed, nor walked into).
    var isFolder: Bool { type == S_IFDIR }

    /// Whether the path is a regular file (itself, not a link to one).
    var isFile: Bool { type == S_IFREG }

    private var type: mode_t? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode & S_IFMT : nil
    }

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

    /// Every entry below this folder (none for a file), each folder before what it holds. (Walked by hand:
    /// Foundation's enumerator did not go into the folders of a FUSE mount.)
    func descendants() -> [MountedPath] {
        guard isFolder, let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return [] }
        return names.sorted().flatMap { name -> [MountedPath] in
            let child = MountedPath(path: path + "/" + name)
            return [child] + child.descendants()
        }
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
