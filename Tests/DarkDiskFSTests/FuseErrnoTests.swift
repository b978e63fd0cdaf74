import DarkDiskStore
import DarkDiskCloud
import DarkDiskCache
import DarkDiskCrypto
import DarkDiskSystem
@testable import DarkDiskFS
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The one place errors become the errno `cat` and `cp` see.
@Suite struct FuseErrnoTests {
    @Test func everyErrorHasTheErrnoAUserExpects() {
        #expect(FuseErrno.from(DarkDiskError(.notFound, "x")) == ENOENT)
        #expect(FuseErrno.from(DarkDiskError(.corrupt, "x")) == EIO)
        #expect(FuseErrno.from(DarkDiskError(.io, "x", errno: ENOSPC)) == ENOSPC)
        #expect(FuseErrno.from(DarkDiskError(.io, "x", errno: EROFS)) == EROFS)
        #expect(FuseErrno.from(DarkDiskError(.tooLarge, "x")) == EFBIG)
        #expect(FuseErrno.from(RemoteError(.accessDenied, "x")) == EACCES, "a 403 is a permission problem, not damage")
        #expect(FuseErrno.from(RemoteError(.unreachable, "x")) == EIO)
        #expect(FuseErrno.from(CryptoError(.chunkAuthenticationFailed, "x")) == EIO)
        #expect(FuseErrno.from(ExtendedAttribute.Failure(.noSuchAttribute, "x")) == ENODATA, "never ENOSYS")
        #expect(FuseErrno.from(RemoteError(.notFound, "x")) == ENOENT, "a node gone from the remote is not there")
        #expect(FuseErrno.from(RemoteError(.unknownNode, "x")) == ENOENT)
        #expect(FuseErrno.from(CancellationError()) == EINTR, "an interrupted wait is EINTR")
        #expect(FuseErrno.from(CryptoError(.outOfRange, "x")) == EIO, "a crypto failure is never EINVAL")
        #expect(FuseErrno.from(Errno(rawValue: EMFILE)) == EMFILE, "a failed system call keeps its errno")
        #expect(FuseErrno.from(DiskCacheError(.io, "x", errno: EDQUOT)) == EDQUOT, "any darkdisk error with an errno keeps it")
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
