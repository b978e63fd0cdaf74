import DarkDiskStore
import DarkDiskCloud
import Dispatch
import Foundation
import DarkDiskSync

/// Fetches, processes and caches in memory node thumbnails and user avatars (ZeroDark.cloud's ZDCImageManager).
///
/// A fetch first consults the memory cache (`nodeThumbnailsCache` or `userAvatarsCache`, keyed by ID plus
/// the processor's identifier). On a miss the image is loaded from the DiskManager, else downloaded by the
/// DownloadManager (which caches it in the DiskManager), then processed on the manager's work queue,
/// cached, and delivered. Identical fetches in flight share one load and one processing run. A definite
/// "no image" (a node without a thumbnail, an identity without an avatar, a user the remote has no record
/// of) is cached as a negative result for `negativeResultLifetime`; errors are never cached. The caches
/// follow the store: when the DiskManager reports that a node's thumbnail or a user's avatar was replaced
/// or deleted, the entries made from the old file go.
public final class ImageManager: Sendable {
    public let diskManager: DiskManager
    /// Where images that are not on local disk come from; without one, only local images are found.
    public let downloadManager: DownloadManager?
    /// Processed node thumbnails: 5 MiB by default; configure or flush it directly.
    public let nodeThumbnailsCache: MemoryImageCache
    /// Processed user avatars: 5 MiB by default; configure or flush it directly.
    public let userAvatarsCache: MemoryImageCache
    /// Where `postFetch` blocks run (ZeroDark.cloud's: the main thread).
    public let callbackQueue: DispatchQueue

    /// Loading from disk, waiting for downloads and libvips all run here: blocking work, kept off the
    /// callers' threads and off Swift's cooperative pool, on the bounded pool every module shares.
    let workPool = BlockingPool.shared
    /// Fetches in flight by key, with everyone waiting for each.
    let inFlight = Locked<[FetchKey: Flight]>([:])
    private let negativeLifetime: Locked<Duration>
    private let watcher = Locked<Task<Void, Never>?>(nil)

    /// An image manager over `diskManager`, downloading what is not local through `downloadManager` (if
    /// given). `postFetch` blocks run on `callbackQueue` (the main queue by default, as in ZeroDark.cloud's framework; a
    /// program without a main run loop passes its own queue or uses the `async` forms).
    public init(diskManager: DiskManager, downloadManager: DownloadManager? = nil, callbackQueue: DispatchQueue = .main,
                nodeThumbnailsCache: MemoryImageCache = MemoryImageCache(), userAvatarsCache: MemoryImageCache = MemoryImageCache(),
                negativeResultLifetime: Duration = .seconds(300)) {
        self.diskManager = diskManager
        self.downloadManager = downloadManager
        self.callbackQueue = callbackQueue
        self.nodeThumbnailsCache = nodeThumbnailsCache
        self.userAvatarsCache = userAvatarsCache
        self.negativeLifetime = Locked(negativeResultLifetime)
        let changes = diskManager.files.changes()
        let task = Task.detached { [weak self] in
            for await change in changes {
                guard let self else { return }
                self.storeDidChange(change)
            }
        }
        watcher.withLock { $0 = task }
    }

    deinit {
        watcher.withLock { $0?.cancel() }
    }

    /// How long a negative result (no thumbnail, no avatar) is trusted before the next fetch looks again
    /// (default 5 minutes). Applies to results cached from now on.
    public var negativeResultLifetime: Duration {
        get { negativeLifetime.withLock { $0 } }
        set { negativeLifetime.withLock { $0 = newValue } }
    }

    func cache(for source: ImageSource) -> MemoryImageCache {
        source.isThumbnail ? nodeThumbnailsCache : userAvatarsCache
    }

    /// ZeroDark.cloud's fetch: `preFetch` runs before this returns, with the cached image and `willFetch` false on
    /// a memory hit (a cached negative result gives nil and false) and nothing more happens; otherwise with
    /// nil and true, and `postFetch` follows on `callbackQueue` with the image (nil: there is none) or an error.
    /// Returns the caller's ticket of the download the fetch waits for, or nil when it needs none (a memory
    /// hit, or the DiskManager's index says the image is local or known not to exist).
    /// A `.remote` policy (refresh) skips the memory cache.
    func fetch(_ source: ImageSource, processor: ImageProcessor?, options: FetchOptions, preFetch: (ProcessedImage?, Bool) -> Void,
               postFetch: @escaping @Sendable (ProcessedImage?, ImageError?) -> Void) -> FetchTicket? {
        let key = source.cacheKey(processor)
        if options.policy != .remote, let key, let entry = cache(for: source).entry(for: key) {
            preFetch(entry.image, false)
            return nil
        }
        preFetch(nil, true)
        return start(source, processor: processor, key: key, policy: options.policy, needsDownload: needsDownload(source, options.policy),
                     waiter: FetchWaiter(queue: callbackQueue) { result in
            switch result {
            case .success(let image): postFetch(image, nil)
            case .failure(let error): postFetch(nil, error)
            }
        })
    }

    /// The async form of `fetch`: the cached image or the fetched one (nil: there is none). Its download
    /// ticket stays internal: it keeps the transfer going for this caller.
    func image(_ source: ImageSource, processor: ImageProcessor?, options: FetchOptions) async throws(ImageError) -> ProcessedImage? {
        let key = source.cacheKey(processor)
        if options.policy != .remote, let key, let entry = cache(for: source).entry(for: key) { return entry.image }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<ProcessedImage?, ImageError>, Never>) in
            // The index read that decides on a download blocks: not on the cooperative pool.
            workPool.submit {
                _ = self.start(source, processor: processor, key: key, policy: options.policy,
                               needsDownload: self.needsDownload(source, options.policy),
                               waiter: FetchWaiter(queue: nil) { continuation.resume(returning: $0) })
            }
        }
        return try result.get()
    }

    /// Joins the fetch in flight for `key`, or starts one (an uncached fetch, with no key, always starts its
    /// own). When `needsDownload`, the download is requested here, and the caller's ticket of it returned;
    /// the fetch then loads from that transfer's result rather than from the disk.
    private func start(_ source: ImageSource, processor: ImageProcessor?, key: ImageCacheKey?, policy: FetchPolicy, needsDownload: Bool,
                       waiter: FetchWaiter) -> FetchTicket? {
        guard let key else {
            let finish: @Sendable (Result<LoadedImage, ImageError>) -> Void = { loaded in waiter(self.process(loaded, with: processor)) }
            if needsDownload { return requestDownload(source, policy: policy, into: FetchDownload(completion: finish)) }
            workPool.submit { self.load(source, policy: policy, completion: finish) }
            return nil
        }
        let fetchKey = FetchKey(thumbnails: source.isThumbnail, key: key, policy: policy)
        let cache = cache(for: source)
        let finish: @Sendable (Result<LoadedImage, ImageError>) -> Void = { loaded in
            let outcome = self.process(loaded, with: processor)
            if case .success(let image) = outcome, case .success(let source) = loaded {
                self.remember(image, from: source, key: key, in: cache, for: fetchKey)
            }
            let waiters = self.inFlight.withLock { $0.removeValue(forKey: fetchKey)?.waiters ?? [] }
            for waiter in waiters { waiter(outcome) }
        }
        enum Joined { case joined(FetchDownload?), cached(ProcessedImage?), started(FetchDownload?) }
        let joined = inFlight.withLock { table -> Joined in
            if table[fetchKey] != nil {
                table[fetchKey]!.waiters.append(waiter)
                return .joined(table[fetchKey]!.download)
            }
            // A fetch may have finished between the caller's miss and now (a refresh wants the remote's).
            if policy != .remote, let entry = cache.entry(for: key) { return .cached(entry.image) }
            let download = needsDownload ? FetchDownload(completion: finish) : nil
            table[fetchKey] = Flight(waiters: [waiter], download: download)
            return .started(download)
        }
        switch joined {
        case .joined(let download):
            // The flight's load waits on the download only if it was started with one; else it finds the
            // image (or starts its own download) and this caller has no ticket to follow.
            guard needsDownload, let download else { return nil }
            return requestDownload(source, policy: policy, into: download)
        case .cached(let image):
            waiter(.success(image))
            return nil
        case .started(let download):
            if let download { return requestDownload(source, policy: policy, into: download) }
            workPool.submit { self.load(source, policy: policy, completion: finish) }
            return nil
        }
    }

    /// Decodes (and processes) loaded bytes; runs on the work queue.
    private func process(_ loaded: Result<LoadedImage, ImageError>, with processor: ImageProcessor?) -> Result<ProcessedImage?, ImageError> {
        switch loaded {
        case .failure(let error):
            return .failure(error)
        case .success(let loaded):
            guard let bytes = loaded.bytes else { return .success(nil) }
            do throws(ImageError) {
                let original = try ProcessedImage(data: bytes)
                guard let processor else { return .success(original) }
                return .success(try processor.process(original))
            } catch {
                return .failure(error)
            }
        }
    }

    /// Caches a result, unless the stored file it came from was replaced meanwhile (the store's change
    /// notification may already have passed; a later one finds the entry and removes it).
    private func remember(_ image: ProcessedImage?, from loaded: LoadedImage, key: ImageCacheKey, in cache: MemoryImageCache, for fetchKey: FetchKey) {
        guard !loaded.provisional else { return }
        let source: ImageSource
        if fetchKey.thumbnails, let node = try? NodeID(key.ownerID) {
            source = .thumbnail(node)
        } else if let user = try? UserID(key.ownerID) {
            source = .avatar(user, loaded.identityID)
        } else {
            return
        }
        guard let current = currentFileID(source), current == loaded.sourceFileID else { return }
        let expires: ContinuousClock.Instant? = image == nil ? cache.clock.now() + negativeResultLifetime : nil
        cache.insert(MemoryImageCache.Entry(image: image, sourceFileID: loaded.sourceFileID,
                                            identityID: loaded.identityID?.rawValue, expires: expires), for: key)
    }

    /// The ID of the stored file a source's image comes from now: `.some(nil)` when none is stored, nil
    /// when the index cannot say.
    func currentFileID(_ source: ImageSource) -> Int64?? {
        do {
            switch source {
            case .thumbnail(let node):
                return .some(try diskManager.files.storedFile(node, kind: .thumbnail)?.fileID)
            case .avatar(let user, let identity):
                guard let identity else { return .some(nil) }
                return .some(try diskManager.files.storedAvatar(user, identityID: identity)?.fileID)
            }
        } catch {
            return nil
        }
    }
}
