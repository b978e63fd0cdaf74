import CFuse3
import Glibc
import Synchronization

/// The session's reads and writes of `/dev/fuse`, through libfuse's custom I/O: plain `read` and `writev`,
/// except that the reply to the kernel's `INIT` carries the flags that libfuse 3.14 drops from it.
///
/// libfuse 3.14 turns `FUSE_CAP_HANDLE_KILLPRIV` on by default but never copies it into its reply (nor
/// `FUSE_CAP_PARALLEL_DIROPS`), so the kernel asks `GETATTR` before every `chown` of a file, to clear
/// set-user-ID bits itself. With the flag, the daemon clears them (`SetIDBits`, in `setattr`), one request
/// less per file that `tar x` makes as root.
extension FuseFileSystem {
    /// `FUSE_HANDLE_KILLPRIV` in `fuse_init_out.flags` (`<linux/fuse.h>`; libfuse keeps its own copy private).
    static let handleKillPrivilegeFlag: UInt32 = 1 << 19
    /// Where `flags` lies in `fuse_init_out` (after `major`, `minor` and `max_readahead`).
    static let initFlagsOffset = 12

    /// `FUSE_INIT`'s opcode in `fuse_in_header`.
    static let initOpcode: UInt32 = 26

    static let customIO: fuse_custom_io = {
        var io = fuse_custom_io()
        io.read = { fd, buffer, length, userdata in
            let count = Glibc.read(fd, buffer, length)
            // (`fuse_in_header`: len, opcode, unique.) The kernel's first request is INIT: its reply is the one to amend.
            if count >= 16, let buffer, let userdata {
                let fileSystem = Unmanaged<FuseFileSystem>.fromOpaque(userdata).takeUnretainedValue()
                let header = UnsafeRawPointer(buffer)
                if fileSystem.initUnique.load(ordering: .relaxed) == 0, header.loadUnaligned(fromByteOffset: 4, as: UInt32.self) == initOpcode {
                    fileSystem.initUnique.store(header.loadUnaligned(fromByteOffset: 8, as: UInt64.self), ordering: .relaxed)
                }
            }
            return count
        }
        io.writev = { fd, iov, count, userdata in
            guard let iov, let userdata, count == 2, iov[0].iov_len >= 16, let header = iov[0].iov_base,
                  iov[1].iov_len >= initFlagsOffset + 4, let body = iov[1].iov_base else { return Glibc.writev(fd, iov, count) }
            // (`fuse_out_header`: len, error, unique.) Only the answer to INIT, and only a success, changes.
            let fileSystem = Unmanaged<FuseFileSystem>.fromOpaque(userdata).takeUnretainedValue()
            let unique = fileSystem.initUnique.load(ordering: .relaxed)
            guard unique != 0, UnsafeRawPointer(header).loadUnaligned(fromByteOffset: 8, as: UInt64.self) == unique,
                  UnsafeRawPointer(header).loadUnaligned(fromByteOffset: 4, as: Int32.self) == 0 else { return Glibc.writev(fd, iov, count) }
            let added = fileSystem.initFlagsToAdd.exchange(0, ordering: .acquiringAndReleasing)
            guard added != 0 else { return Glibc.writev(fd, iov, count) }
            var copy = [UInt8](UnsafeRawBufferPointer(start: body, count: iov[1].iov_len))
            let flags = copy.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: initFlagsOffset, as: UInt32.self) } | added
            copy.withUnsafeMutableBytes { $0.storeBytes(of: flags, toByteOffset: initFlagsOffset, as: UInt32.self) }
            let written = copy.withUnsafeMutableBytes { bytes in
                var vectors = [iov[0], iovec(iov_base: bytes.baseAddress, iov_len: bytes.count)]
                return Glibc.writev(fd, &vectors, 2)
            }
            if written > 0 { fileSystem.logger.info("FUSE session: this daemon clears set-ID bits (FUSE_HANDLE_KILLPRIV added to INIT's answer)") }
            return written
        }
        return io
    }()

    /// Reads and writes the session's `/dev/fuse` through `customIO` (after `fuse_session_mount`, which opened it).
    func useCustomIO(_ session: OpaquePointer) -> Bool {
        var io = Self.customIO
        return fuse_session_custom_io(session, &io, fuse_session_fd(session)) == 0
    }
}
