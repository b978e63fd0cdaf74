import CVips
@testable import DarkDiskImages
import DarkDiskStore
import DarkDiskCloud
import DarkDiskTestSupport
import Foundation
import Synchronization
import Testing
import DarkDiskSync

/// Real images for the tests, drawn and encoded by libvips.
enum TestImages {
    /// A `width` x `height` gradient (colour varies with `seed`), encoded as `output`.
    static func make(width: Int, height: Int, seed: UInt8 = 0, bands: Int = 3, as output: OutputFormat) throws -> Data {
        try LibVips.start()
        var pixels = [UInt8](repeating: 0, count: width * height * bands)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * bands
                pixels[i] = UInt8(x * 255 / max(1, width - 1))
                if bands > 1 { pixels[i + 1] = UInt8(y * 255 / max(1, height - 1)) }
                if bands > 2 { pixels[i + 2] = seed }
                if bands > 3 { pixels[i + 3] = 255 }
            }
        }
        let image = pixels.withUnsafeBytes {
            darkdisk_vips_image_new_from_memory_uchar($0.baseAddress, $0.count, Int32(width), Int32(height), Int32(bands))
        }
        return try VipsImageRef(try #require(image)).encode(output)
    }

    static func jpeg(_ width: Int, _ height: Int, seed: UInt8 = 0) throws -> Data { try make(width: width, height: height, seed: seed, as: .jpeg()) }
    static func png(_ width: Int, _ height: Int, seed: UInt8 = 0) throws -> Data { try make(width: width, height: height, seed: seed, as: .png) }

    /// The decoded pixels of an encoded image (row-major, `bands` bytes per pixel).
    static func pixels(_ data: Data) throws -> (bands: Int, width: Int, bytes: [UInt8]) {
        try LibVips.start()
        return try data.withUnsafeBytes { buffer in
            let image = VipsImageRef(try #require(darkdisk_vips_load_buffer(buffer.baseAddress, buffer.count)))
            var size = 0
            let memory = try #require(darkdisk_vips_image_write_to_memory(image.pointer, &size))
            defer { darkdisk_g_free(memory) }
            return (image.bands, image.width, Array(UnsafeRawBufferPointer(start: memory, count: size)))
        }
    }
}

/// A real file remote seen through a counting layer: it counts the reads that cross it, can slow them down,
/// and can fail them as an unreachable server would.
final class CountingRemote: Remote, Sendable {
    let inner: FileRemote
    let reads = Atomic<Int>(0)
    /// Microseconds to wait before each read (a slow server, so that concurrent fetches overlap).
    let delay = Atomic<Int>(0)
    /// Fail every read (a transient outage).
    let failing = Atomic<Bool>(false)

    init(_ inner: FileRemote) { self.inner = inner }

    var url: String { inner.url }
    func list(prefix: String) async throws(RemoteError) -> [ObjectInfo] { try await inner.list(prefix: prefix) }
    func info(_ key: String) async throws(RemoteError) -> ObjectInfo? {
        if failing.load(ordering: .relaxed) { throw RemoteError(.unreachable, "connection refused (injected)") }
        return try await inner.info(key)
    }
    func write(_ key: String, fromFile path: String) async throws(RemoteError) -> ObjectInfo { try await inner.write(key, fromFile: path) }
    func write(_ key: String, data: Data, condition: WriteCondition) async throws(RemoteError) -> ObjectInfo { try await inner.write(key, data: data, condition: condition) }
    func delete(_ key: String, condition: WriteCondition) async throws(RemoteError) { try await inner.delete(key, condition: condition) }

    func read(_ key: String, range: Range<UInt64>, ifMatch etag: String?,
              consume: (UnsafeRawBufferPointer) throws(RemoteError) -> Void) async throws(RemoteError) {
        if failing.load(ordering: .relaxed) { throw RemoteError(.unreachable, "connection refused (injected)") }
        reads.wrappingAdd(1, ordering: .relaxed)
        let delay = delay.load(ordering: .relaxed)
        if delay > 0 { try? await Task.sleep(nanoseconds: UInt64(delay) * 1000) }
        try await inner.read(key, range: range, ifMatch: etag, consume: consume)
    }
}

/// Two stores sharing one master key and a file remote (as CloudTests.Setup): store `a` pushes, store `b`
/// pulls and reads through an image manager.
final class ImageSetup {
    let directory: String
    let remote: FileRemote
    let counting: CountingRemote
    let a: DiskManager
    let b: DiskManager
    let downloads: DownloadManager
    let callbacks = DispatchQueue(label: "darkdisk.tests.callbacks")
    static let callbackKey = DispatchSpecificKey<String>()

    init() throws {
        directory = NSTemporaryDirectory() + "darkdisk-images-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory + "/remote", withIntermediateDirectories: true)
        remote = FileRemote(root: directory + "/remote")
        counting = CountingRemote(remote)
        let passphrase = Array("shared secret".utf8)
        a = try DiskManager.create(at: StoreLocation(directory: directory + "/a"), passphrase: passphrase, passphraseCost: .weakest)
        let keyFile = try MasterKeyFile.contents(at: a.location.keyPath)
        b = try DiskManager.create(at: StoreLocation(directory: directory + "/b"), passphrase: passphrase, adoptingKeyFile: keyFile)
        downloads = DownloadManager(manager: b, remote: counting)
        callbacks.setSpecific(key: Self.callbackKey, value: "callbacks")
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// An image manager over store `b`, downloading through the counting remote, calling back on `callbacks`.
    func images(negativeLifetime: Duration = .seconds(300), clock: ExpiryClock = .continuous) -> ImageManager {
        ImageManager(diskManager: b, downloadManager: downloads, callbackQueue: callbacks,
                     nodeThumbnailsCache: MemoryImageCache(clock: clock), userAvatarsCache: MemoryImageCache(clock: clock),
                     negativeResultLifetime: negativeLifetime)
    }

    /// Store A pushes a node (with `thumbnail` if given); store B pulls the outline.
    @discardableResult
    func push(_ id: String, thumbnail: Data?) async throws -> NodeID {
        let node = try NodeID(id)
        let path = directory + "/" + id
        try Data("data of \(id)".utf8).write(to: URL(fileURLWithPath: path))
        try await CloudSync(manager: a, remote: remote).push(dataFile: path, nodeID: node, thumbnail: thumbnail)
        _ = try await CloudSync(manager: b, remote: remote).pull()
        return node
    }
}

/// Collects what a callback fetch reports, and lets a test wait for `postFetch`.
final class FetchRecord: Sendable {
    struct Post: Sendable {
        let image: ProcessedImage?
        let error: ImageError?
        let onCallbackQueue: Bool
    }
    let events = Locked<[String]>([])
    private let posts = Locked<(results: [Post], waiters: [(Int, CheckedContinuation<[Post], Never>)])>(([], []))

    func log(_ event: String) { events.withLock { $0.append(event) } }

    var postFetch: @Sendable (ProcessedImage?, ImageError?) -> Void {
        { image, error in
            self.log("post")
            let post = Post(image: image, error: error, onCallbackQueue: DispatchQueue.getSpecific(key: ImageSetup.callbackKey) == "callbacks")
            let ready = self.posts.withLock { state -> [(CheckedContinuation<[Post], Never>, [Post])] in
                state.results.append(post)
                let (done, waiting) = (state.waiters.filter { $0.0 <= state.results.count }, state.waiters.filter { $0.0 > state.results.count })
                state.waiters = waiting
                return done.map { ($0.1, state.results) }
            }
            for (continuation, results) in ready { continuation.resume(returning: results) }
        }
    }

    /// Waits until `count` postFetch calls have come.
    func posts(_ count: Int) async -> [Post] {
        await withCheckedContinuation { continuation in
            let ready = posts.withLock { state -> [Post]? in
                if state.results.count >= count { return state.results }
                state.waiters.append((count, continuation))
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    var postCount: Int { posts.withLock { $0.results.count } }
}

