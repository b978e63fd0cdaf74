/// The sections of a `.cloudFile`, in file order; use `rawValue` as the `section` argument.
public enum CloudFileSection: Int, Sendable {
    /// The node's metadata (usually JSON).
    case metadata = 0
    /// A small preview image, possibly empty.
    case thumbnail = 1
    /// The file content.
    case data = 2
}
