/// A fast 64-bit checksum of a value's bytes, stored in the index so that a value damaged on disk (a flipped
/// bit, a truncated or overwritten file) is noticed on read and treated as a miss. Not cryptographic: it guards
/// against accidents, at several GB/s, so 1 MiB values pay about a tenth of a millisecond.
enum ContentChecksum {
    static func of(_ bytes: UnsafeRawBufferPointer) -> Int64 {
        let k1: UInt64 = 0x9E37_79B9_7F4A_7C15, k2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
        var a: UInt64 = 0x243F_6A88_85A3_08D3, b: UInt64 = 0x1319_8A2E_0370_7344
        var c: UInt64 = 0xA409_3822_299F_31D0, d: UInt64 = 0x082E_FA98_EC4E_6C89
        let count = bytes.count
        var offset = 0
        if let base = bytes.baseAddress {
            // Four independent lanes of 8 bytes keep the multiplier busy.
            while offset + 32 <= count {
                a = ((a ^ base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* k1).rotatedLeft(31)
                b = ((b ^ base.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)) &* k1).rotatedLeft(31)
                c = ((c ^ base.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self)) &* k1).rotatedLeft(31)
                d = ((d ^ base.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self)) &* k1).rotatedLeft(31)
                offset += 32
            }
            while offset < count {
                a = ((a ^ UInt64(base.load(fromByteOffset: offset, as: UInt8.self))) &* k2).rotatedLeft(29)
                offset += 1
            }
        }
        var h = UInt64(count) &* k2
        for lane in [a, b, c, d] { h = ((h ^ lane) &* k1).rotatedLeft(27) &+ k2 }
        h ^= h >> 33
        h = h &* k2
        h ^= h >> 29
        return Int64(bitPattern: h)
    }
}

extension UInt64 {
    @inline(__always) fileprivate func rotatedLeft(_ n: UInt64) -> UInt64 { (self << n) | (self >> (64 - n)) }
}
