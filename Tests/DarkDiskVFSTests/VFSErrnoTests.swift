import DarkDiskStore
import DarkDiskCloud
import DarkDiskCache
import DarkDiskCrypto
import DarkDiskSystem
@testable import DarkDiskVFS
@testable import DarkDiskFS
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The one place errors become the errno `cat` and `cp` see.
@Suite struct VFSErrnoTests {
    @Test func everyErrorHasTheErrnoAUserExpects() {
        #expect(VFSErrno.from(DarkDiskError(.notFound, "x")) == ENOENT)
        #expect(VFSErrno.from(DarkDiskError(.corrupt, "x")) == EIO)
        #expect(VFSErrno.from(DarkDiskError(.io, "x", errno: ENOSPC)) == ENOSPC)
        #expect(VFSErrno.from(DarkDiskError(.io, "x", errno: EROFS)) == EROFS)
        #expect(VFSErrno.from(DarkDiskError(.tooLarge, "x")) == EFBIG)
        #expect(VFSErrno.from(RemoteError(.accessDenied, "x")) == EACCES, "a 403 is a permission problem, not damage")
        #expect(VFSErrno.from(RemoteError(.unreachable, "x")) == EIO)
        #expect(VFSErrno.from(CryptoError(.chunkAuthenticationFailed, "x")) == EIO)
        #expect(VFSErrno.from(ExtendedAttribute.Failure(.noSuchAttribute, "x")) == ENODATA, "never ENOSYS")
        #expect(VFSErrno.from(RemoteError(.notFound, "x")) == ENOENT, "a node gone from the remote is not there")
        #expect(VFSErrno.from(RemoteError(.unknownNode, "x")) == ENOENT)
        #expect(VFSErrno.from(CancellationError()) == EINTR, "an interrupted wait is EINTR")
        #expect(VFSErrno.from(CryptoError(.outOfRange, "x")) == EIO, "a crypto failure is never EINVAL")
        #expect(VFSErrno.from(Errno(rawValue: EMFILE)) == EMFILE, "a failed system call keeps its errno")
        #expect(VFSErrno.from(DiskCacheError(.io, "x", errno: EDQUOT)) == EDQUOT, "any darkdisk error with an errno keeps it")
    }

    /// Every error type is a `DarkDiskFailure`: one protocol for the CLI to catch, each with its message.
    @Test func everyErrorTypeIsADarkDiskFailure() {
        let failures: [any Error] = [DarkDiskError(.notFound, "a"), RemoteError(.io, "b"), CryptoError(.corrupt, "c"),
                                     ExtendedAttribute.Failure(.readOnly, "d"), DiskCacheError(.io, "e")]
        #expect(failures.map { ($0 as? any DarkDiskFailure)?.message } == ["a", "b", "c", "d", "e"])
    }
}

/// The mount options a user may pass.
@Suite struct MountOptionsTests {
    @Test func optionsThatExcludeEachOtherAreRefused() throws {
        #expect(try MountOptions.parse(["allow_other,noatime"]) == ["allow_other", "noatime"])
        #expect(throws: MountOptions.UnsupportedOption.self) { try MountOptions.parse(["allow_other,allow_root"]) }
        #expect(throws: MountOptions.UnsupportedOption.self) { try MountOptions.parse(["allow_root", "allow_other"]) }
        #expect(throws: MountOptions.UnsupportedOption.self) { try MountOptions.parse(["fsname=x"]) }
        #expect(throws: MountOptions.UnsupportedOption.self) { try MountOptions.parse(["max_read=0"]) }
    }
}
