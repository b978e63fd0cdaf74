#if canImport(Glibc)
import Glibc
#endif
import DarkDiskSystem

/// The module's system calls: `SystemCall`'s, with failures as `CryptoError`s naming the file.
enum POSIXIO {
    /// What messages call an open descriptor: its path (from /proc/self/fd), else "file descriptor N". A
    /// message naming "file descriptor 13" told the user nothing.
    static func name(of fd: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard n > 0 else { return "file descriptor \(fd)" }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path.hasPrefix("/") ? path : "file descriptor \(fd) (\(path))"
    }

    /// Flags and mode for every file this module creates: private to the owner, replacing old content.
    static func createFile(_ path: String) throws(CryptoError) -> OwnedDescriptor {
        do { return try OwnedDescriptor.open(path, O_CREAT | O_TRUNC | O_WRONLY, mode: 0o600) } catch {
            throw .posix("cannot create \(path)", errno: error.rawValue)
        }
    }

    /// Opens `path` for reading.
    static func openForReading(_ path: String) throws(CryptoError) -> OwnedDescriptor {
        do { return try OwnedDescriptor.open(path, O_RDONLY) } catch {
            throw .posix("cannot open \(path)", errno: error.rawValue)
        }
    }

    /// Closes a file this module wrote to, reporting a failed close (which can carry a deferred write error).
    static func closeWritten(_ file: OwnedDescriptor, name: @autoclosure () -> String) throws(CryptoError) {
        do { try file.close() } catch {
            throw .posix("cannot write \(name())", errno: error.rawValue)
        }
    }

    /// Cuts the file open at `fd` to `size` bytes.
    static func truncate(_ fd: Int32, to size: UInt64, name: @autoclosure () -> String) throws(CryptoError) {
        do { try SystemCall.ftruncate(fd, to: size) } catch {
            throw .posix("cannot truncate \(name())", errno: error.rawValue)
        }
    }

    /// Reads up to `count` bytes at `offset`, stopping early only at end of file; returns the bytes read.
    static func pread(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, at offset: UInt64,
                      name: @autoclosure () -> String) throws(CryptoError) -> Int {
        do { return try SystemCall.pread(fd, into: buffer, count: count, at: offset) } catch {
            throw .posix("cannot read \(name())", errno: error.rawValue)
        }
    }

    /// Writes all `count` bytes at `offset`.
    static func pwrite(_ fd: Int32, from buffer: UnsafeRawPointer, count: Int, at offset: UInt64,
                       name: @autoclosure () -> String) throws(CryptoError) {
        do { try SystemCall.pwrite(fd, from: buffer, count: count, at: offset) } catch {
            throw .posix("cannot write \(name())", errno: error.rawValue)
        }
    }

    /// Reads from a stream until `count` bytes arrived or it ended; returns the bytes read (0 only at end).
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, name: @autoclosure () -> String) throws(CryptoError) -> Int {
        do { return try SystemCall.read(fd, into: buffer, count: count) } catch {
            throw .posix("cannot read \(name())", errno: error.rawValue)
        }
    }

    /// Writes all `count` bytes to a stream at its current position.
    static func write(_ fd: Int32, from buffer: UnsafeRawPointer, count: Int, name: @autoclosure () -> String) throws(CryptoError) {
        do { try SystemCall.write(fd, from: buffer, count: count) } catch {
            throw .posix("cannot write \(name())", errno: error.rawValue)
        }
    }

    /// The size of the open file `fd`.
    static func fileSize(_ fd: Int32, name: @autoclosure () -> String) throws(CryptoError) -> UInt64 {
        do { return UInt64(try SystemCall.fstat(fd).st_size) } catch {
            throw .posix("cannot stat \(name())", errno: error.rawValue)
        }
    }
}
