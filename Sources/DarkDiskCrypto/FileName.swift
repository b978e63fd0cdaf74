/// What error messages call a file a reader or writer works on: the path it was opened by, or its open
/// descriptor, whose path is looked up (`/proc/self/fd`) only when a message is made. Looking it up for
/// every file opened cost a `readlink` per new file in a `tar x`, for messages almost never written.
struct FileName: Sendable, CustomStringConvertible {
    private let path: String?
    private let descriptor: Int32

    init(path: String) {
        self.path = path
        descriptor = -1
    }

    init(descriptor: Int32) {
        path = nil
        self.descriptor = descriptor
    }

    var description: String { path ?? POSIXIO.name(of: descriptor) }
}
