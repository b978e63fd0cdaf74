import CFuse3
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The answer to one FUSE request, owned by whoever is to give it (the operation, or a later download
/// callback): answered exactly once. A request dropped unanswered (a path that forgot, an error thrown past
/// its reply) answers `EIO` with a log line when its last reference goes, so no caller ever hangs; a second
/// answer is refused with a log line instead of corrupting libfuse's state (the `fuser` crate's `ReplyRaw`).
final class FuseReply: Sendable {
    /// libfuse's request: valid until answered; used to answer, and by `fuse_add_direntry` to size entries.
    nonisolated(unsafe) let request: fuse_req_t?
    private let operation: String
    private let logger: Logger
    private let answered = Atomic<Bool>(false)

    init(_ req: fuse_req_t?, _ operation: String, logger: Logger) {
        self.request = req
        self.operation = operation
        self.logger = logger
    }

    deinit {
        guard !answered.load(ordering: .acquiring) else { return }
        logger.error("\(operation): request dropped unanswered; answering EIO")
        fuse_reply_err(request, EIO)
    }

    /// The user ID of the process that asked (read before the request is answered).
    var callerUID: uid_t { fuse_req_ctx(request)?.pointee.uid ?? 0 }

    /// Takes the one right to answer; false (and a log line) if it was taken already.
    private func claim() -> Bool {
        guard answered.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            logger.error("\(operation): a second answer to one request was refused")
            return false
        }
        return true
    }

    /// Answers with an error number (0 answers success for operations without data).
    func error(_ code: Int32) {
        guard claim() else { return }
        fuse_reply_err(request, code)
    }

    /// Answers with bytes (a read, a listing, an attribute's value).
    func buffer(_ bytes: UnsafePointer<CChar>?, _ count: Int) {
        guard claim() else { return }
        fuse_reply_buf(request, bytes, count)
    }

    /// Answers a readdirplus with its listing; nonzero if the kernel did not take it (the caller then undoes
    /// the lookup counts the entries carried).
    func listing(_ bytes: UnsafePointer<CChar>?, _ count: Int) -> Int32 {
        guard claim() else { return -EALREADY }
        return fuse_reply_buf(request, bytes, count)
    }

    /// Answers a lookup; nonzero if the kernel is gone (the caller then undoes the lookup count).
    func entry(_ param: inout fuse_entry_param) -> Int32 {
        guard claim() else { return -EALREADY }
        return fuse_reply_entry(request, &param)
    }

    /// Answers a getattr.
    func attr(_ st: inout stat, timeout: Double) {
        guard claim() else { return }
        fuse_reply_attr(request, &st, timeout)
    }

    /// Answers an open or opendir; nonzero if the kernel is gone (the caller then drops the handle).
    func open(_ fi: UnsafePointer<fuse_file_info>) -> Int32 {
        guard claim() else { return -EALREADY }
        return fuse_reply_open(request, fi)
    }

    /// Answers a create with the new entry and its open handle; nonzero if the kernel is gone (the caller
    /// then drops the handle and the lookup count).
    func create(_ param: inout fuse_entry_param, _ fi: UnsafePointer<fuse_file_info>) -> Int32 {
        guard claim() else { return -EALREADY }
        return fuse_reply_create(request, &param, fi)
    }

    /// Answers a write: all `count` bytes were taken.
    func written(_ count: Int) {
        guard claim() else { return }
        fuse_reply_write(request, count)
    }

    /// Answers a readlink with the link's target.
    func link(_ target: String) {
        guard claim() else { return }
        fuse_reply_readlink(request, target)
    }

    /// Answers a statfs.
    func statfs(_ st: inout statvfs) {
        guard claim() else { return }
        fuse_reply_statfs(request, &st)
    }

    /// Answers a size probe of getxattr or listxattr.
    func xattrSize(_ size: Int) {
        guard claim() else { return }
        fuse_reply_xattr(request, size)
    }
}
