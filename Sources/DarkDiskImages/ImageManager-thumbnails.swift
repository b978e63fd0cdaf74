import DarkDiskStore
import DarkDiskCloud

extension ImageManager {
    /// Fetches a node's thumbnail (ZeroDark.cloud's `fetchNodeThumbnail`), processed by `processor` if given.
    ///
    /// - `preFetch` always runs, before this returns. On a memory hit (key: node ID + the processor's
    ///   identifier) it gets the cached image and `willFetch` false, and that is all; a cached negative
    ///   result gives nil and false (the node has no thumbnail). Otherwise it gets nil and true.
    /// - Then the thumbnail is loaded from the DiskManager, else downloaded (and cached by the DiskManager),
    ///   processed on the work queue, cached in `nodeThumbnailsCache` (not if the processor's identifier is
    ///   nil), and `postFetch` runs on `callbackQueue` with the image (nil: the node has no thumbnail) or an
    ///   error. Identical fetches in flight share one load and one processing run.
    ///
    /// Returns the ticket of the download the fetch needs (the DownloadManager's `downloadNodeMeta` of the
    /// thumbnail: progress, cancel), whose result is the one `postFetch` gets; or nil when no download is
    /// needed: a memory hit, or the DiskManager's index says the thumbnail is on local disk or that the node
    /// has none. Identical fetches in flight each get their own ticket of the one transfer; cancelling a
    /// ticket stops the transfer only when no other fetch waits on it, and then `postFetch` gets an error.
    /// `options` may forbid the download (`.neverDownload`) or ask the remote even if cached (`.refresh`).
    @discardableResult
    public func fetchNodeThumbnail(_ nodeID: NodeID, options: FetchOptions = .default, processor: ImageProcessor? = nil,
                                   preFetch: (_ image: ProcessedImage?, _ willFetch: Bool) -> Void,
                                   postFetch: @escaping @Sendable (_ image: ProcessedImage?, _ error: ImageError?) -> Void) -> DownloadTicket<NodeMetaDownload>? {
        fetch(.thumbnail(nodeID), processor: processor, options: options, preFetch: preFetch, postFetch: postFetch)?.thumbnail
    }

    /// The node's thumbnail, processed by `processor` if given: from memory, else loaded, processed and
    /// cached as `fetchNodeThumbnail` does (with `options` as there). Nil when the node has no thumbnail.
    public func nodeThumbnail(_ nodeID: NodeID, options: FetchOptions = .default, processor: ImageProcessor? = nil) async throws(ImageError) -> ProcessedImage? {
        try await image(.thumbnail(nodeID), processor: processor, options: options)
    }

    /// Removes every cached thumbnail of a node (every processor's, and a negative result).
    public func flushNodeThumbnailCache(_ nodeID: NodeID) {
        nodeThumbnailsCache.removeAll { $0.ownerID == nodeID.rawValue }
    }

    /// Removes every cached thumbnail made by the processor with this identifier.
    public func flushNodeThumbnailCache(processorID: String) {
        nodeThumbnailsCache.removeAll { $0.processorID == processorID }
    }
}
