/// A fast 64-bit checksum of a value's bytes, stored in the index so that a value damaged on disk (a flipped
/// bit, a truncated, grown or overwritten file) is noticed on read and treated as a miss. Not cryptographic:
/// it guards against accidents. A Fletcher-style sum over four 64-bit lanes (only additions, which the
/// compiler vectorises), so that checking a 1 MiB value costs a small fraction of reading it; the lanes are
/// mixed with the length at the end.
enum ContentChecksum {
    static func of(_ bytes: UnsafeRawBufferPointer) -> Int64 {
        var sum = SIMD4<UInt64>(1, 2, 3, 4)
        var weighted = SIMD4<UInt64>(5, 6, 7, 8)
        let count = bytes.count
        var offset = 0
        if let base = bytes.baseAddress {
            while offset + 32 <= count {
                sum &+= base.loadUnaligned(fromByteOffset: offset, as: SIMD4<UInt64>.self)
                weighted &+= sum
                offset += 32
            }
            var tail = SIMD4<UInt64>(repeating: 0)
            var shift: UInt64 = 0
            while offset < count {
                let lane = (offset % 32) / 8
                tail[lane] |= UInt64(base.load(fromByteOffset: offset, as: UInt8.self)) << shift
                offset += 1
                shift = (shift + 8) % 64
            }
            sum &+= tail
            weighted &+= sum
        }
        var h = UInt64(count) &* 0x9E37_79B9_7F4A_7C15
        for i in 0..<4 {
            h = mix(h ^ sum[i])
            h = mix(h ^ weighted[i])
        }
        return Int64(bitPattern: h)
    }

    @inline(__always) private static func mix(_ value: UInt64) -> UInt64 {
        var x = value &* 0xBF58_476D_1CE4_E5B9
        x ^= x >> 31
        x = x &* 0x94D0_49BB_1331_11EB
        return x ^ (x >> 29)
    }
}
