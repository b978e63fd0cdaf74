import DarkDiskSystem
#if canImport(Glibc)
import Glibc
#endif

/// A read-only descriptor shared by the readers of a partial file; closed when the last one lets go. It
/// stays valid after the finished file is renamed into the store.
public final class SharedDescriptor: Sendable {
    public let fileDescriptor: Int32

    init(_ fd: Int32) {
        fileDescriptor = fd
    }

    /// Opens `path` for reading.
    static func open(_ path: String) throws(RemoteError) -> SharedDescriptor {
        do { return SharedDescriptor(try SystemCall.open(path, O_RDONLY)) } catch {
            throw RemoteError(.io, "cannot open \(path): \(error)")
        }
    }

    deinit {
        close(fileDescriptor)
    }
}
