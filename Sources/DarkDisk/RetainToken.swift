#if canImport(Glibc)
import Glibc
#endif

/// Keeps one stored file from being deleted while it is alive, in this process and in every other one.
///
/// It holds an open descriptor with a shared `flock`; deleters take an exclusive lock without waiting and,
/// when that fails, leave the path in the index's pending-delete list. The last holder to let go finishes
/// the delete. The kernel drops the lock if the process dies, so a `kill -9` never strands a file.
public final class RetainToken: Sendable {
    /// An open, read-only descriptor of the retained file (readers may `pread` it; the token closes it).
    public let fileDescriptor: Int32
    let path: String
    private let deleter: FileDeleter

    init(fileDescriptor: Int32, path: String, deleter: FileDeleter) {
        self.fileDescriptor = fileDescriptor
        self.path = path
        self.deleter = deleter
    }

    deinit {
        close(fileDescriptor)
        deleter.finishPendingDelete(path)
    }
}
