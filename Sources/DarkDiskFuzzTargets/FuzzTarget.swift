/// The parsers and readers `Scripts/fuzz` drives with libFuzzer: each target takes any bytes and
/// must neither crash nor break the property it checks (a tampered file never decrypts, an accepted ID is
/// safe as a file name, a parsed value reads back the same). Errors thrown for bad input are the expected
/// outcome; a violated property stops the process with `fatalError`, which libFuzzer reports as a crash.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// A cloud- or cache-file header (`CryptoFileHeader(authenticating:)`), as a ranged fetch gets it.
    case header
    /// A whole encrypted file read through `CryptoFileReader`, every section to the end.
    case reader
    /// Encrypts the input, changes one byte of the result (chosen by the input), and checks that the
    /// reader refuses it: never wrong bytes.
    case tamper
    /// A node record and a user record from the remote (`NodeRecord.parse`, `UserRecord.parse`).
    case records
    /// Node, user and identity IDs, which become file and folder names.
    case ids
    /// Extended-attribute names and values written by `setfattr`.
    case xattr
    /// S3 XML answers: ListObjectsV2 pages and error documents.
    case s3xml

    /// Runs the target on one input.
    public func run(_ input: [UInt8]) {
        switch self {
        case .header: Self.header(input)
        case .reader: Self.reader(input)
        case .tamper: Self.tamper(input)
        case .records: Self.records(input)
        case .ids: Self.ids(input)
        case .xattr: Self.xattr(input)
        case .s3xml: Self.s3xml(input)
        }
    }
}
