/// A file a `CryptoFileWriter` has finished, as a reader of it needs it: its header and its file key,
/// known to the process that wrote them, so that reading the file it just wrote costs no `pread` of the
/// header, no key derivation and no authentication (`CryptoFileReader(finished:fileDescriptor:owner:)`).
public struct FinishedCryptoFile: Sendable {
    public let header: CryptoFileHeader
    let fileKey: [UInt8]
}
