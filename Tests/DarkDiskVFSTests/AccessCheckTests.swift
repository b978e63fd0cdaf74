@testable import DarkDiskVFS
@testable import DarkDiskFS
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's own permission checks (single-user mounts) and the set-ID bits a change clears: pure rules,
/// checked against what Linux's local file systems do (`PermissionTests` compares whole scripts).
@Suite struct AccessCheckTests {
    @Test func theOwnersBitsDecideForTheOwner() {
        let file = mode_t(S_IFREG)
        #expect(AccessCheck.allows(.read, mode: file | 0o400, isRoot: false))
        #expect(!AccessCheck.allows(.write, mode: file | 0o400, isRoot: false))
        #expect(!AccessCheck.allows([.read, .write], mode: file | 0o400, isRoot: false))
        #expect(AccessCheck.allows([.read, .write], mode: file | 0o600, isRoot: false))
        // The group's and others' bits give the owner nothing.
        #expect(!AccessCheck.allows(.read, mode: file | 0o077, isRoot: false))
        #expect(AccessCheck.allows([], mode: file, isRoot: false), "existence alone (F_OK)")
        let folder = mode_t(S_IFDIR)
        #expect(!AccessCheck.allows(.execute, mode: folder | 0o600, isRoot: false))
        #expect(AccessCheck.allows([.write, .execute], mode: folder | 0o300, isRoot: false))
    }

    @Test func rootReadsAndWritesAnythingAndExecutesWhatSomeoneMay() {
        let file = mode_t(S_IFREG)
        #expect(AccessCheck.allows([.read, .write], mode: file, isRoot: true))
        #expect(!AccessCheck.allows(.execute, mode: file | 0o666, isRoot: true))
        #expect(AccessCheck.allows(.execute, mode: file | 0o001, isRoot: true))
        #expect(AccessCheck.allows(.execute, mode: mode_t(S_IFDIR), isRoot: true), "a folder is always searchable")
    }

    @Test func openFlagsWantTheirAccessModeAndTruncationWrites() {
        #expect(AccessMode(openFlags: O_RDONLY) == .read)
        #expect(AccessMode(openFlags: O_WRONLY | O_CREAT) == .write)
        #expect(AccessMode(openFlags: O_RDWR) == [.read, .write])
        #expect(AccessMode(openFlags: O_RDONLY | O_TRUNC) == [.read, .write])
        #expect(AccessMode(openFlags: O_WRONLY | O_APPEND) == .write)
        #expect(AccessMode(openFlags: O_RDONLY | AccessMode.execOpenFlag) == .execute, "execve's open")
    }

    @Test func aChangeClearsSetUserIDAndSetGroupIDOnlyWithGroupExecute() {
        #expect(SetIDBits.cleared(0o4755) == 0o755)
        #expect(SetIDBits.cleared(0o2775) == 0o775)
        #expect(SetIDBits.cleared(0o6775) == 0o775)
        // Without group execute, set-group-ID means mandatory locking: it stays.
        #expect(SetIDBits.cleared(0o2765) == nil)
        #expect(SetIDBits.cleared(0o6765) == 0o2765)
        #expect(SetIDBits.cleared(0o755) == nil)
        #expect(SetIDBits.cleared(0o1777) == nil, "the sticky bit is not a set-ID bit")
    }

    @Test func onlyAllowOtherAndAllowRootLeaveTheChecksToTheKernel() {
        #expect(!MountOptions.admitsOthers([]))
        #expect(!MountOptions.admitsOthers(["noatime", "auto_unmount"]))
        #expect(MountOptions.admitsOthers(["allow_other"]))
        #expect(MountOptions.admitsOthers(["noatime", "allow_root"]))
    }
}
