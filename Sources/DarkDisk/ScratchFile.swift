import DarkDiskSystem
import Foundation

/// A file of the store's cache staging folder for a component's own encrypted scratch data (a cloud file
/// composed for an upload), held with a shared lock and removed when released. A process killed while
/// holding one leaves it to the orphan sweep (unlocked and untouched for ten minutes), never to /tmp.
public final class ScratchFile: Sendable {
    public let path: String
    private let fd: Int32

    init(folder: String) throws(DarkDiskError) {
        try FileOperations.makeDirectory(folder)
        path = folder + "/" + FileOperations.randomName(extension: "scratch")
        do { fd = try SystemCall.open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600) } catch {
            throw DarkDiskError.posix("cannot create", path: path, errno: error.rawValue)
        }
        do { try SystemCall.lock(fd, .shared) } catch {
            unlink(path)
            close(fd)
            throw DarkDiskError.posix("cannot lock", path: path, errno: error.rawValue)
        }
        StagingFiles.register(path)
    }

    deinit {
        StagingFiles.unregister(path)
        unlink(path)
        close(fd)
    }
}

extension DiskManager {
    /// A new scratch file in the cache staging folder (see `ScratchFile`).
    public func makeScratchFile() throws(DarkDiskError) -> ScratchFile {
        try ScratchFile(folder: location.cacheStaging)
    }
}
