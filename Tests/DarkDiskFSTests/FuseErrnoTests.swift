import DarkDisk
import DarkDiskCloud
import DarkDiskCrypto
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
