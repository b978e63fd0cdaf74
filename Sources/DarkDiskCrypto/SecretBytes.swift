import COpenSSL
import DarkDiskSync
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Key material in memory that stays out of swap and core dumps and is wiped when the last reference goes.
///
/// Keys of up to `SecretArena.slotSize` bytes live in slots of one `mlock`ed, `MADV_DONTDUMP` region; when
/// its slots run out (or the system refuses to lock more memory) a key lives on the heap instead, still wiped
/// when freed. Copies a caller takes (`SymmetricKey.bytes`) are ordinary arrays, outside this protection.
final class SecretBytes: @unchecked Sendable {
    let count: Int
    private let pointer: UnsafeMutableRawPointer
    private let slot: Int?

    /// A secret of `count` bytes that `initialize` writes in place (the bytes never exist elsewhere).
    init<E: Error>(count: Int, _ initialize: (UnsafeMutableRawBufferPointer) throws(E) -> Void) throws(E) {
        // Filled before the object is whole: a throwing initializer of a whole object would also run
        // `deinit`, and free the memory twice.
        let (slot, pointer): (Int?, UnsafeMutableRawPointer) = SecretArena.shared.take(count).map { ($0.0, $0.1) }
            ?? (nil, .allocate(byteCount: max(count, 1), alignment: 16))
        do {
            try initialize(UnsafeMutableRawBufferPointer(start: pointer, count: count))
        } catch {
            Self.wipeAndFree(pointer, count: count, slot: slot)
            throw error
        }
        self.count = count
        self.pointer = pointer
        self.slot = slot
    }

    /// A secret holding a copy of `bytes`.
    convenience init(copying bytes: UnsafeRawBufferPointer) {
        self.init(count: bytes.count) { (destination: UnsafeMutableRawBufferPointer) in destination.copyMemory(from: bytes) }
    }

    deinit {
        Self.wipeAndFree(pointer, count: count, slot: slot)
    }

    private static func wipeAndFree(_ pointer: UnsafeMutableRawPointer, count: Int, slot: Int?) {
        OPENSSL_cleanse(pointer, count)
        if let slot {
            SecretArena.shared.give(slot)
        } else {
            pointer.deallocate()
        }
    }

    /// Calls `body` with the secret's bytes, which must not escape it.
    func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Whether two secrets hold the same bytes, compared in constant time.
    func constantTimeEquals(_ other: SecretBytes) -> Bool {
        count == other.count && CRYPTO_memcmp(pointer, other.pointer, count) == 0
    }
}

/// Overwrites `bytes` with zeros in a way the compiler cannot drop (a passphrase, a key's ordinary copy).
public func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { buffer in
        if let base = buffer.baseAddress { OPENSSL_cleanse(base, buffer.count) }
    }
}

/// Overwrites `data` with zeros in a way the compiler cannot drop.
public func wipe(_ data: inout Data) {
    data.withUnsafeMutableBytes { buffer in
        if let base = buffer.baseAddress { OPENSSL_cleanse(base, buffer.count) }
    }
}

/// The locked region `SecretBytes` takes its slots from: 64 KiB (2,048 keys), mapped once, locked into
/// memory (best effort: the lock limit may refuse it) and left out of core dumps.
final class SecretArena: @unchecked Sendable {
    static let slotSize = 32
    static let size = 64 * 1024
    static let shared = SecretArena()

    private let base: UnsafeMutableRawPointer?
    private let free: Locked<[Int]>

    private init() {
        let mapped = mmap(nil, Self.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        if let mapped, mapped != MAP_FAILED {
            _ = madvise(mapped, Self.size, MADV_DONTDUMP)
            _ = mlock(mapped, Self.size)
            base = mapped
            free = Locked(Array((0..<(Self.size / Self.slotSize)).reversed()))
        } else {
            base = nil
            free = Locked([])
        }
    }

    /// A free slot for `count` bytes, if one is left and the secret fits.
    func take(_ count: Int) -> (Int, UnsafeMutableRawPointer)? {
        guard let base, count <= Self.slotSize, let slot = free.withLock({ $0.popLast() }) else { return nil }
        return (slot, base + slot * Self.slotSize)
    }

    /// Returns a wiped slot.
    func give(_ slot: Int) {
        free.withLock { $0.append(slot) }
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` with a typed error (the standard library's rethrows loses the type).
    func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try withUnsafeBytes { buffer in Result { () throws(E) in try body(buffer) } }.get()
    }

    /// `withUnsafeMutableBytes` with a typed error.
    mutating func withMutableBytes<R, E: Error>(_ body: (UnsafeMutableRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try withUnsafeMutableBytes { buffer in Result { () throws(E) in try body(buffer) } }.get()
    }
}
