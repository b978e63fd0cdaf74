/// Where a request may take its answer from, per call (ZeroDark.cloud's `ZDCFetchOptions`): the stored copy, the
/// remote, or whichever applies.
public enum FetchPolicy: Sendable, Hashable {
    /// The stored copy if there is one, else the remote's (the default).
    case storedOrRemote
    /// Never download: the stored copy, or `RemoteError.Code.notLocal` when there is none. An image fetch
    /// that may not download gives a cached image or one loaded from the store, or `notAvailable`.
    case storedOnly
    /// Refresh: ask the remote even if a copy is stored, and replace the stored copy (and any image made
    /// from it) with what the remote sends. A persistent file stays persistent.
    case remote
}
