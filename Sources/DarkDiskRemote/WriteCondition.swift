/// What must hold in the remote for a write to land: S3's `If-None-Match: *` and `If-Match`,
/// a lock and compare on `file://` remotes.
public enum WriteCondition: Sendable, Equatable {
    /// Write whatever is there.
    case none
    /// Write only if no object has the key (a new record).
    case absent
    /// Write only if the object is still the one with this ETag (an update of the record a change was based on).
    case matches(String)
}
