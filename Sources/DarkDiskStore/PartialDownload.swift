/// A cloud file being downloaded: the version (ETag) and size it is for, where its bytes go, and the byte
/// ranges already written and flushed, so a fetch after a crash or a lost connection resumes.
package struct PartialDownload: Sendable, Equatable {
    package let nodeID: NodeID
    package let etag: String
    package let size: UInt64
    /// The partial file, in the cache folder's `partial/` (it may vanish with the cache folder).
    package let path: String
    /// Sorted, non-overlapping ranges present in the partial file.
    package var ranges: [Range<UInt64>]

    package var receivedBytes: UInt64 { ranges.reduce(0) { $0 + UInt64($1.count) } }

    /// The parts of `0..<size` still missing, cut at `partSize`.
    package func missingParts(partSize: UInt64) -> [Range<UInt64>] {
        var missing: [Range<UInt64>] = []
        var position: UInt64 = 0
        for range in ranges + [size..<size] {
            var start = position
            while start < range.lowerBound {
                let end = min(range.lowerBound, start + partSize)
                missing.append(start..<end)
                start = end
            }
            position = max(position, range.upperBound)
        }
        return missing
    }

    /// The ranges of the index's text form (`0-65536,131072-196608`); malformed parts are left out.
    static func parse(_ text: String) -> [Range<UInt64>] {
        text.split(separator: ",").compactMap { part -> Range<UInt64>? in
            let bounds = part.split(separator: "-").compactMap { UInt64($0) }
            return bounds.count == 2 && bounds[0] < bounds[1] ? bounds[0]..<bounds[1] : nil
        }
    }

    /// Adds a received range, merging neighbours.
    package mutating func add(_ range: Range<UInt64>) {
        ranges = Self.merge(ranges, range)
    }

    /// `ranges` (sorted, non-overlapping) with `range` added, neighbours merged.
    package static func merge(_ ranges: [Range<UInt64>], _ range: Range<UInt64>) -> [Range<UInt64>] {
        var merged: [Range<UInt64>] = []
        for r in (ranges + [range]).sorted(by: { $0.lowerBound < $1.lowerBound }) where !r.isEmpty {
            if let last = merged.last, r.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, r.upperBound)
            } else {
                merged.append(r)
            }
        }
        return merged
    }
}
