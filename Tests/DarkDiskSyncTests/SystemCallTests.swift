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

@Suite struct OwnedDescriptorTests {
    let path = NSTemporaryDirectory() + "darkdisk-descriptor-" + UUID().uuidString

    /// Whether `fd` is an open descriptor of this process.
    private func isOpen(_ fd: Int32) -> Bool { fcntl(fd, F_GETFD) != -1 }

    @Test func theOwnerClosesItsDescriptorOnceWhenItGoes() throws {
        defer { unlink(path) }
        var number: Int32 = -1
        do {
            let file = try OwnedDescriptor.open(path, O_RDWR | O_CREAT | O_TRUNC, mode: 0o600)
            number = file.rawValue
            #expect(isOpen(number))
        }
        #expect(!isOpen(number), "released, the owner closed it")
    }

    @Test func anExplicitCloseHappensOnceAndLaterCallsFailWithEBADF() throws {
        defer { unlink(path) }
        let file = try OwnedDescriptor.open(path, O_RDWR | O_CREAT | O_TRUNC, mode: 0o600)
        let number = file.rawValue
        try file.close()
        #expect(!isOpen(number))
        #expect(file.rawValue == -1)
        try file.close()  // (nothing: it is closed already)
        #expect(throws: Errno(rawValue: EBADF)) { try file.fsync() }
    }

    @Test func callsGoThroughTheSystemCallLayer() throws {
        defer { unlink(path) }
        let file = try OwnedDescriptor.open(path, O_RDWR | O_CREAT | O_TRUNC, mode: 0o600)
        let bytes: [UInt8] = Array(0..<100)
        try file.pwrite(from: bytes, count: bytes.count, at: 0)
        try file.fsync()
        try file.fdatasync()
        #expect(try file.stat().st_size == 100)
        try file.truncate(to: 10)
        #expect(try file.stat().st_size == 10)
        var back = [UInt8](repeating: 0, count: 100)
        #expect(try file.pread(into: &back, count: back.count, at: 0) == 10)
        #expect(Array(back[0..<10]) == Array(bytes[0..<10]))
        let other = try OwnedDescriptor.open(path, O_RDONLY)
        try file.lock(.exclusive)
        #expect(try !other.tryLock(.shared))
        try file.unlock()
        #expect(try other.tryLock(.shared))
        #expect(throws: Errno(rawValue: EBADF)) { try SystemCall.close(-1) }
    }
}
