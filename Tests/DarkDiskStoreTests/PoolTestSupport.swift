import DarkDiskStore
import DarkDiskTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// Helpers shared by the pool, retain, expiry, migration and disk-reality tests.

func fileExists(_ path: String) -> Bool {
    FileManager.default.fileExists(atPath: path)
}

/// Regular files anywhere under `directory` (empty if it does not exist).
func regularFiles(under directory: String) -> [String] {
    guard let enumerator = FileManager.default.enumerator(atPath: directory) else { return [] }
    var files: [String] = []
    while let relative = enumerator.nextObject() as? String {
        var isDirectory: ObjCBool = false
        let path = directory + "/" + relative
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
            files.append(path)
        }
    }
    return files
}

/// The status line of one pool.
func poolStatus(_ manager: DiskManager, _ pool: Pool) throws -> PoolStatus {
    guard let status = try manager.files.status().first(where: { $0.pool == pool }) else {
        throw DarkDiskError(.notFound, "no status for pool \(pool.rawValue)")
    }
    return status
}

/// Imports `size` pseudo-random bytes as a cache file (or persistent) and lets the export go at once.
/// Returns the stored path and stored size.
@discardableResult
func importFile(_ manager: DiskManager, _ id: String, size: Int = 10_000, kind: FileKind = .data,
                persistent: Bool = false, expiration: Double = 0) throws -> (path: String, storedSize: UInt64) {
    var diskImport = DiskImport(cleartextData: TemporaryStore.bytes(size, seed: seed(id)))
    diskImport.storePersistently = persistent
    diskImport.expiration = expiration
    let stored = try { () throws -> (path: String, storedSize: UInt64) in
        let export = try manager.importNodeFile(diskImport, nodeID: NodeID(id), kind: kind)
        return (export.cryptoFile.path, export.storedSize)
    }()
    // The eviction the import kicked (and the release of its export) runs on the store's maintenance queue.
    manager.files.waitForMaintenance()
    return stored
}

/// The plaintext `importFile` stores for `id`.
func contents(_ id: String, size: Int = 10_000) -> Data {
    TemporaryStore.bytes(size, seed: seed(id))
}

private func seed(_ id: String) -> UInt64 {
    id.utf8.reduce(UInt64(14_695_981_039_346_656_037)) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 }
}

/// "Reads" a node file (export, then drop the export), which makes it the most recently accessed.
func touch(_ manager: DiskManager, _ id: String, kind: FileKind = .data) throws {
    _ = try manager.files.nodeFile(NodeID(id), kind: kind)
}

/// Whether the store still has the node's file, in the index and on disk.
func isStored(_ manager: DiskManager, _ id: String, kind: FileKind = .data) throws -> Bool {
    try manager.files.storedFile(NodeID(id), kind: kind) != nil && manager.files.hasNodeFile(NodeID(id), kind: kind)
}

/// Opens `path` and takes a shared `flock` on it, as another process's retain token would.
func lockShared(_ path: String) -> Int32? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    guard flock(fd, LOCK_SH) == 0 else { close(fd); return nil }
    return fd
}

/// Free bytes over total bytes of the file system holding `path`.
func freeFraction(of path: String) -> Double {
    var st = statvfs()
    guard statvfs(path, &st) == 0, st.f_blocks > 0 else { return 0 }
    return Double(st.f_bavail) / Double(st.f_blocks)
}

/// A tmpfs of a given size mounted on a fresh temporary folder (root only), unmounted when released.
final class TmpfsMount {
    let path: String

    /// Whether this process can mount a tmpfs: it must run as root and have `mount`.
    static let isAvailable: Bool = getuid() == 0 && FileManager.default.isExecutableFile(atPath: mountTool)
    private static let mountTool = "/bin/mount"
    private static let umountTool = "/bin/umount"

    init(sizeMiB: Int) throws {
        path = NSTemporaryDirectory() + "darkdisk-tmpfs-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let status = try Self.run(Self.mountTool, ["-t", "tmpfs", "-o", "size=\(sizeMiB)m,mode=0700", "tmpfs", path])
        guard status == 0 else {
            rmdir(path)
            throw DarkDiskError(.io, "mount -t tmpfs on \(path) exited with status \(status)")
        }
    }

    deinit {
        // Lazy, so that a descriptor still open somewhere cannot keep the test's mount around.
        _ = try? Self.run(Self.umountTool, ["-l", path])
        rmdir(path)
    }

    private static func run(_ tool: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// A store whose data and key live in a temporary folder and whose cache folder is on a tmpfs.
final class TmpfsStore {
    let temporary: TemporaryStore
    let mount: TmpfsMount
    let location: StoreLocation

    init(cacheMiB: Int) throws {
        temporary = try TemporaryStore()
        mount = try TmpfsMount(sizeMiB: cacheMiB)
        location = StoreLocation(dataDirectory: temporary.directory + "/data", cacheDirectory: mount.path + "/cache",
                                 configDirectory: temporary.directory + "/config")
    }

    func create() throws -> DiskManager {
        try DiskManager.create(at: location)
    }
}

/// Runs each body on its own thread, all at once (not on Swift's small cooperative pool, where they could
/// end up running one after the other), and returns when all are done.
func onThreads(_ bodies: [@Sendable () -> Void]) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let group = DispatchGroup()
        for body in bodies {
            group.enter()
            Thread { body(); group.leave() }.start()
        }
        group.notify(queue: .global()) { continuation.resume() }
    }
}
