import Foundation

/// Self-checking DiskCache values, shared by `darkdisk-cache-tool` (which writes them from another process,
/// also while being killed) and the DiskCache tests (which check what they read): "KEY#GEN#" and then bytes
/// computed from both, so a value read back can be told to be exactly some write of its key. Sizes alternate
/// between small (kept in the index) and large (in files).
public enum CacheValuePattern {
    public static func size(_ generation: Int) -> Int {
        generation % 3 == 0 ? 40_000 + (generation * 7919) % 160_000 : 100 + (generation * 131) % 5000
    }

    public static func value(key: String, generation: Int) -> Data {
        var data = Data("\(key)#\(generation)#".utf8)
        let seed = UInt8(truncatingIfNeeded: key.utf8.reduce(0) { $0 &+ Int($1) })
        data.append(contentsOf: (0..<size(generation)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ generation) ^ seed })
        return data
    }

    /// Whether `data` is exactly some write of `key`.
    public static func check(_ data: Data, key: String) -> Bool {
        let prefix = Data("\(key)#".utf8)
        guard data.starts(with: prefix) else { return false }
        let rest = data.dropFirst(prefix.count)
        guard let hash = rest.firstIndex(of: UInt8(ascii: "#")),
              let generation = Int(String(decoding: rest[rest.startIndex..<hash], as: UTF8.self)) else { return false }
        return data == value(key: key, generation: generation)
    }
}
