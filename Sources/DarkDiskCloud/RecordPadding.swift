import DarkDiskCrypto
import Foundation

/// The padding of a sealed record's JSON, so that its size tells the bucket's owner nothing of the name
/// or the attributes it holds: at least 1 KiB, and above that Padmé's sizes (a size of E significant bits
/// keeps its top ⌊log₂ E⌋ + 1 bits; at most 12 % larger, and a size reveals O(log log n) bits). The
/// padding is spaces after the JSON, which JSON readers skip.
package enum RecordPadding {
    package static let minimum = 1024

    /// `json` followed by spaces up to its padded size.
    static func padded(_ json: Data) -> [UInt8] {
        Array(json) + [UInt8](repeating: 0x20, count: size(for: json.count) - json.count)
    }

    /// The padded size of `length` bytes.
    package static func size(for length: Int) -> Int {
        Int(Padme.size(for: UInt64(max(0, length)), minimum: UInt64(minimum)))
    }
}
