import DarkDiskStore
import DarkDiskCrypto

/// Where a range of a node's plaintext can be decrypted now (see `DownloadManager.whenReadable`).
package enum PlaintextSource: Sendable {
    /// The node's stored data, retained while this value lives.
    case stored(DiskExport)
    /// A reader over the download's partial file: its header authenticated with the node's key, and the
    /// chunks covering the range asked for written.
    case downloading(PartialReader)
}

/// A reader over one partial download file and the descriptor it reads (kept open by the reader). A caller
/// hands it back to `whenReadable` to skip the header next time: a download restarted for a new version of
/// the node writes another partial file, and then gets a new reader.
package struct PartialReader: Sendable {
    package let reader: CryptoFileReader
    let descriptor: SharedDescriptor

    /// Whether both read the same partial file.
    package func isSameFile(as other: PartialReader) -> Bool { descriptor === other.descriptor }
}
