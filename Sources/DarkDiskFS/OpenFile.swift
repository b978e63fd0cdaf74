import DarkDisk
import DarkDiskCrypto

/// One open file handle of the mount: the retained export (its token keeps the file on disk until
/// `release`) and the random-access reader over the token's descriptor.
final class OpenFile: Sendable {
    let entry: FSEntry
    let export: DiskExport
    let reader: CryptoFileReader

    init(entry: FSEntry, export: DiskExport, reader: CryptoFileReader) {
        self.entry = entry
        self.export = export
        self.reader = reader
    }
}
