import DarkDiskStore
import DarkDiskCrypto
import Foundation

/// The plaintext of an export, read through the random-access reader on the token's descriptor.
func decrypt(_ export: DiskExport) throws -> Data {
    let reader = try export.reader()
    let section = reader.dataSection
    return Data(try reader.read(section: section, offset: 0, count: Int(reader.plaintextSize(ofSection: section))))
}
