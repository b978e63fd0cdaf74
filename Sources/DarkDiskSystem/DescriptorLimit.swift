import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The process's limit on open descriptors. A mount daemon holds one per open file of its users, per file
/// waiting for the index and per prepared new file; the soft limit a shell hands down (often 1024) would
/// turn a busy mount's opens into `EMFILE`. Raising it to the hard limit is what Go's runtime does for every
/// program since 1.19 (gocryptfs, rclone); the hard limit stays the administrator's.
package enum DescriptorLimit {
    /// Raises the soft limit to the hard one; the soft limit now (unchanged if it could not be raised).
    @discardableResult
    package static func raiseToHard() -> UInt64 {
        var limit = rlimit()
        guard getrlimit(descriptors, &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(descriptors, &raised) == 0 { return UInt64(raised.rlim_cur) }
        }
        return UInt64(limit.rlim_cur)
    }

    /// `RLIMIT_NOFILE`, as `getrlimit` takes it.
    private static var descriptors: __rlimit_resource_t { __rlimit_resource_t(UInt32(RLIMIT_NOFILE.rawValue)) }
}
