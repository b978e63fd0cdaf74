import DarkDiskSystem
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct SystemCallTests {
    let path = NSTemporaryDirectory() + "darkdisk-syscall-" + UUID().uuidString

    @Test func aFailureCarriesTheErrnoOfTheCall() {
        #expect(throws: Errno.noSuchFile) { try SystemCall.open(path + "/missing", O_RDONLY) }
        #expect(Errno.noSpace.description == "No space left on device")
    }

    @Test func preadAndPwriteMoveEveryByteAndStopOnlyAtTheEnd() throws {
        let fd = try SystemCall.open(path, O_RDWR | O_CREAT | O_TRUNC, mode: 0o600)
        defer { close(fd); unlink(path) }
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try SystemCall.pwrite(fd, from: bytes, count: bytes.count, at: 5)
        var back = [UInt8](repeating: 0, count: 400_000)
        let n = try SystemCall.pread(fd, into: &back, count: back.count, at: 5)
        #expect(n == bytes.count, "a read past the end returns what there is")
        #expect(Array(back[0..<n]) == bytes)
        #expect(try SystemCall.pread(fd, into: &back, count: 10, at: 10_000_000) == 0)
    }

    @Test func tryLockSaysWhenAnotherHolderHasTheFile() throws {
        let first = try SystemCall.open(path, O_RDWR | O_CREAT, mode: 0o600)
        let second = try SystemCall.open(path, O_RDONLY)
        defer { close(first); close(second); unlink(path) }
        try SystemCall.lock(first, .shared)
        #expect(try SystemCall.tryLock(second, .shared), "shared locks coexist")
        try SystemCall.unlock(second)
        #expect(try !SystemCall.tryLock(second, .exclusive), "a holder's shared lock keeps an exclusive one out")
        try SystemCall.unlock(first)
        #expect(try SystemCall.tryLock(second, .exclusive))
        #expect(throws: Errno(rawValue: EBADF)) { try SystemCall.lock(-1, .shared) }
    }
}
