import DarkDiskSystem
#if canImport(Glibc)
import Glibc
#endif

/// A read-only descriptor shared by the readers of a partial file; closed when the last one lets go. It
/// stays valid after the finished file is renamed into the store.
package final class SharedDescriptor: Sendable {
    private let owner: OwnedDescriptor

    /// The descriptor's number: open while this object lives.
    package var fileDescriptor: Int32 { owner.rawValue }

    private init(_ owner: OwnedDescriptor) {
        self.owner = owner
    }

    /// Opens `path` for reading.
    static func open(_ path: String) throws(RemoteError) -> SharedDescriptor {
        do { return SharedDescriptor(try OwnedDescriptor.open(path, O_RDONLY)) } catch {
            throw RemoteError(.io, "cannot open \(path): \(error)")
        }
    }
}
