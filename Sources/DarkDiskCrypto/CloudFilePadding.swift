import COpenSSL
import DarkDiskSystem
#if canImport(Glibc)
import Glibc
#endif

/// Sizes the bucket's owner sees: a cloud file is followed by random bytes up to a padded length, so its
/// object's size tells only roughly how large the node is. The padded length is a function of the length
/// the authenticated header describes, so a reader knows it exactly and an object cut short or extended is
/// still refused; the padding itself is never read.
public enum CloudFilePadding {
    /// Every padded object is at least this long: folders, links and small files look alike.
    public static let minimum: UInt64 = 1024

    /// The padded length of a cloud file of `fileLength` bytes: at least `minimum`, and above it Padmé's
    /// sizes (a length of E significant bits keeps its top ⌊log₂ E⌋ + 1 bits: at most 12 % more, and a
    /// length reveals O(log log n) bits).
    public static func paddedLength(_ fileLength: UInt64) -> UInt64 {
        Padme.size(for: fileLength, minimum: minimum)
    }

    /// Whether an object of `size` bytes holds a cloud file whose header describes `fileLength` bytes:
    /// padded, or (written before padding) exactly that long.
    public static func accepts(objectSize size: UInt64, fileLength: UInt64) -> Bool {
        size == fileLength || size == paddedLength(fileLength)
    }

    /// The length of a cloud file whose sections hold `sectionSizes` plaintext bytes in chunks of
    /// `chunkSize` (the header, then each section's bytes and a tag per chunk); nil if it overflows.
    public static func fileLength(sectionSizes: [UInt64], chunkSize: UInt32 = CryptoFormat.defaultChunkSize) -> UInt64? {
        guard chunkSize > 0 else { return nil }
        var total = UInt64(CryptoFormat.headerSize)
        for size in sectionSizes {
            let chunks = size / UInt64(chunkSize) + (size % UInt64(chunkSize) == 0 ? 0 : 1)
            let (tags, o1) = chunks.multipliedReportingOverflow(by: UInt64(CryptoFormat.tagSize))
            let (section, o2) = size.addingReportingOverflow(tags)
            let (sum, o3) = total.addingReportingOverflow(section)
            guard !(o1 || o2 || o3) else { return nil }
            total = sum
        }
        return total
    }

    /// Appends random bytes to the cloud file at `path` (exactly `fileLength` bytes long) up to its padded
    /// length.
    public static func pad(fileAt path: String, fileLength: UInt64) throws(CryptoError) {
        let target = paddedLength(fileLength)
        guard target > fileLength else { return }
        let file: OwnedDescriptor
        do { file = try OwnedDescriptor.open(path, O_WRONLY) } catch {
            throw CryptoError(.io, "cannot open \(path) to pad it: \(error)")
        }
        var offset = fileLength
        while offset < target {
            let count = Int(min(target - offset, 64 * 1024))
            let random = SecureRandom.bytes(count)
            do { try file.pwrite(from: random, count: count, at: offset) } catch {
                throw CryptoError(.io, "cannot pad \(path): \(error)")
            }
            offset += UInt64(count)
        }
    }
}

/// Padmé (Nikitin et al., "Reducing Metadata Leakage from Encrypted Files and Communication with PURBs",
/// 2019): the padded size of a length, used for cloud files and sealed records.
public enum Padme {
    /// `length` rounded up so that only its top ⌊log₂ E⌋ + 1 of E significant bits remain, and at least
    /// `minimum`.
    public static func size(for length: UInt64, minimum: UInt64) -> UInt64 {
        guard length > minimum, length > 1 else { return max(minimum, length) }
        let e = UInt64.bitWidth - 1 - length.leadingZeroBitCount   // ⌊log₂ length⌋
        let s = Int.bitWidth - 1 - e.leadingZeroBitCount + 1       // ⌊log₂ e⌋ + 1
        let mask: UInt64 = (1 << UInt64(e - s)) - 1
        return (length + mask) & ~mask
    }
}
