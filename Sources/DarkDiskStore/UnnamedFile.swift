import DarkDiskSync
import Foundation
import Synchronization
import DarkDiskSystem
#if canImport(Glibc)
import Glibc
#endif

/// A stored file being written before it has a name: an unnamed file (`O_TMPFILE`) in a staging folder of
/// the store's disk, so that a process killed while writing it leaves nothing behind, named only when its
/// version commits (`place(at:)`: one `linkat`, no copy and no rename of a named temporary). It owns its
/// descriptor, and closes it when released; whoever keeps the placed file open takes a `dup` of it.
final class UnnamedFile: Sendable {
    /// Open for reading and writing.
    let file: OwnedDescriptor
    /// `file`'s descriptor number, valid while this lives.
    var fileDescriptor: Int32 { file.rawValue }
    /// Where a file system without `O_TMPFILE` keeps the stand-in, a named file removed unless placed.
    private let temporaryPath: String?
    /// The name the file is meant to get, in the folder it was made in (nil: any).
    let intendedName: String?
    private let placed = Locked(false)

    /// This process's `/proc/self/fd` (`O_PATH`), opened once and kept for the process's life; -1 where there
    /// is none (then the full path).
    private static let descriptors: Int32 = (try? SystemCall.open("/proc/self/fd", UnnamedFile.pathOnly | O_DIRECTORY)) ?? -1

    /// Linux's `O_PATH` and `AT_EMPTY_PATH` (Glibc does not export them to Swift).
    private static let pathOnly: Int32 = 0o10000000
    private static let emptyPath: Int32 = 0x1000

    /// Whether `linkat` may name a file by its descriptor (`AT_EMPTY_PATH`): Linux 6.10 and later allow it to
    /// the file's opener, earlier ones only with `CAP_DAC_READ_SEARCH`. Cleared once the kernel refuses.
    static let linksByDescriptor = Atomic<Bool>(true)

    /// Links the file at `path`; whether it did (else `errno` says why). By its descriptor where the kernel
    /// allows it, else through `/proc/self/fd` (walking that path cost a quarter of the link). The kernel
    /// refuses a link by descriptor with `ENOENT`, as it reports a missing folder: the other way tells which.
    private func link(to path: String) -> Bool {
        guard Self.linksByDescriptor.load(ordering: .relaxed) else { return linkThroughProc(to: path) }
        if linkat(fileDescriptor, "", AT_FDCWD, path, Self.emptyPath) == 0 { return true }
        guard errno == ENOENT || errno == EPERM || errno == EINVAL else { return false }
        // (Failing this way too, for the same reason: the folder is missing, or no link can be made there.)
        guard linkThroughProc(to: path) else { return false }
        Self.linksByDescriptor.store(false, ordering: .relaxed)
        return true
    }

    private func linkThroughProc(to path: String) -> Bool {
        let (folder, source) = Self.descriptors >= 0 ? (Self.descriptors, "\(fileDescriptor)") : (AT_FDCWD, "/proc/self/fd/\(fileDescriptor)")
        return linkat(folder, source, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0
    }

    /// Linux's `O_TMPFILE` (a macro Swift does not import): `__O_TMPFILE | O_DIRECTORY`.
    private static let tmpfile: Int32 = 0o20000000 | O_DIRECTORY

    /// A new, empty file on the file system of `directory` (which must exist), mode 0600.
    init(in directory: String) throws(DarkDiskError) {
        intendedName = nil
        if let unnamed = try? OwnedDescriptor.open(directory, Self.tmpfile | O_RDWR | O_NOFOLLOW, mode: 0o600) {
            file = unnamed
            temporaryPath = nil
            return
        }
        let path = directory + "/" + FileOperations.randomName()
        file = try FileOperations.openFile(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600, failing: "cannot create")
        temporaryPath = path
        StagingFiles.register(path)
    }

    /// A new, empty file made in `directory` (never through a symbolic link), the folder it is to be placed
    /// in as `name`, so that its inode
    /// is allocated near its neighbours (ext4 searches the folder's group for a free inode: made in one
    /// staging folder, thousands of new files took twice as long). Nil where the file system has no
    /// `O_TMPFILE` (a named stand-in there would be taken for debris before it is placed).
    init?(in directory: String, named name: String) {
        guard let unnamed = try? OwnedDescriptor.open(directory, Self.tmpfile | O_RDWR | O_NOFOLLOW, mode: 0o600) else { return nil }
        file = unnamed
        temporaryPath = nil
        intendedName = name
    }

    deinit {
        try? file.close()
        if let temporaryPath, !placed.withLock({ $0 }) {
            StagingFiles.unregister(temporaryPath)
            unlink(temporaryPath)
        }
    }

    /// Whether the file has been given a name (it can be given one once).
    var isPlaced: Bool { placed.withLock { $0 } }

    /// Gives the file the name `path` (whose folder is made if missing); nothing may be there yet.
    func place(at path: String) throws(DarkDiskError) {
        precondition(!isPlaced, "an unnamed file is placed once")
        if let temporaryPath {
            try FileOperations.makeDirectory((path as NSString).deletingLastPathComponent)
            guard rename(temporaryPath, path) == 0 else { throw .posix("cannot move \(temporaryPath) to", path: path) }
            StagingFiles.unregister(temporaryPath)
        } else {
            // The folder is made when the link finds it missing (once per folder), not looked for every time.
            if !link(to: path) {
                guard errno == ENOENT else { throw .posix("cannot name the new file", path: path) }
                try FileOperations.makeDirectory((path as NSString).deletingLastPathComponent)
                guard link(to: path) else { throw .posix("cannot name the new file", path: path) }
            }
        }
        placed.withLock { $0 = true }
    }
}
