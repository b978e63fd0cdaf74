import DarkDiskStore
import DarkDiskTestSupport
@testable import DarkDiskVFS
import Foundation
import Testing

/// `ExtendedAttribute` on its own: names, writability and the value syntax, without a mount.
@Suite struct ExtendedAttributeTests {
    @Test func everyNameParsesBackToItsAttribute() {
        #expect(ExtendedAttribute.all.count == 4 + 3 * 5 + 1 + 1 + 1)
        for attribute in ExtendedAttribute.all {
            #expect(ExtendedAttribute(name: Array(attribute.name.utf8)) == attribute, "\(attribute.name)")
        }
        #expect(ExtendedAttribute(name: Array("user.darkdisk.pool.thumbnails.cached_size".utf8)) == .pool(.thumbnails, .cachedSize))
        #expect(ExtendedAttribute.names(for: .file).map(\.name) == ["user.darkdisk.persistent", "user.darkdisk.expiration", "user.darkdisk.local", "user.darkdisk.sync"])
        #expect(ExtendedAttribute.names(for: .root).allSatisfy { $0.holder == .root })
        #expect(ExtendedAttribute.names(for: .file).allSatisfy { $0.holder == .file })
        #expect(ExtendedAttribute.names(for: .drive) == [.node] && ExtendedAttribute.node.name == "user.darkdisk.node" && !ExtendedAttribute.node.isWritable)
        #expect(ExtendedAttribute.all.filter(\.isWritable).map(\.name).sorted() == [
            "user.darkdisk.expiration", "user.darkdisk.local", "user.darkdisk.persistent", "user.darkdisk.pin",
            "user.darkdisk.pool.avatars.default_expiration", "user.darkdisk.pool.avatars.max_size",
            "user.darkdisk.pool.data.default_expiration", "user.darkdisk.pool.data.max_size",
            "user.darkdisk.pool.thumbnails.default_expiration", "user.darkdisk.pool.thumbnails.max_size",
        ])
        #expect(ExtendedAttribute.nameList([.persistent, .local]) == Array("user.darkdisk.persistent\0user.darkdisk.local\0".utf8))
        #expect(ExtendedAttribute.nameList([]) == [])
    }

    @Test func nearMissesAndOddBytesNameNothing() {
        let names: [[UInt8]] = [
            [], Array("user.darkdisk.".utf8), Array("user.darkdisk.persistent ".utf8), Array(" user.darkdisk.persistent".utf8),
            Array("USER.darkdisk.persistent".utf8), Array("user.darkdisk.pool.data".utf8), Array("user.darkdisk.pool.data.".utf8),
            Array("user.darkdisk.pool..max_size".utf8), Array("user.darkdisk.pool.Data.max_size".utf8),
            Array("user.darkdisk.pool.data.max_size.x".utf8), Array("trusted.darkdisk.persistent".utf8),
            Array("user.darkdisk.persistent".utf8) + [0], Array("user.darkdisk.persistent".utf8) + [0xFF],
            [0xC0] + Array("user.darkdisk.persistent".utf8), Array("user.darkdisk.persisten\u{0074}\u{0301}".utf8),
            Array(repeating: UInt8(ascii: "a"), count: 300),
        ]
        for name in names {
            #expect(ExtendedAttribute(name: name) == nil, "\(name)")
        }
    }

    @Test func writesParseIntoAssignments() throws {
        func assign(_ attribute: ExtendedAttribute, _ text: String) throws -> ExtendedAttribute.Assignment {
            try attribute.assignment(from: Array(text.utf8))
        }
        #expect(try assign(.persistent, "1") == .persistent(true))
        #expect(try assign(.persistent, "0\n") == .persistent(false))
        #expect(try assign(.persistent, "-0") == .persistent(false))
        #expect(try assign(.expiration, "-1") == .expiration(-1))
        #expect(try assign(.expiration, "0003600") == .expiration(3600))
        #expect(try assign(.expiration, "-9223372036854775808") == .expiration(.min))
        #expect(try assign(.expiration, "9223372036854775807") == .expiration(.max))
        #expect(try assign(.pool(.avatars, .maxSize), "0") == .maxSize(.avatars, 0))
        #expect(try assign(.pool(.data, .maxSize), "9223372036854775807") == .maxSize(.data, UInt64(Int64.max)))
        #expect(try assign(.pool(.thumbnails, .defaultExpiration), "-5") == .defaultExpiration(.thumbnails, -5))
        #expect(ExtendedAttribute.Assignment.expiration(-3).text == "-3")
        #expect(ExtendedAttribute.Assignment.persistent(true).text == "1")
    }

    @Test func badWritesAreRefusedWithTheirReason() throws {
        let invalid: [(ExtendedAttribute, [UInt8])] = [
            (.persistent, Array("2".utf8)), (.persistent, Array("-1".utf8)), (.persistent, Array("".utf8)), (.persistent, Array("\n".utf8)),
            (.persistent, Array("1\n\n".utf8)), (.persistent, Array("1\r\n".utf8)), (.persistent, [0x31, 0]), (.persistent, [0, 0x31]),
            (.persistent, Array("+1".utf8)), (.persistent, Array(" 1".utf8)), (.persistent, Array("yes".utf8)), (.persistent, Array("１".utf8)),
            (.expiration, Array("-".utf8)), (.expiration, Array("--1".utf8)), (.expiration, Array("1-".utf8)), (.expiration, Array("1.0".utf8)),
            (.expiration, Array("9223372036854775808".utf8)), (.expiration, Array("-9223372036854775809".utf8)),
            (.expiration, Array("18446744073709551616".utf8)), (.expiration, Array(repeating: UInt8(ascii: "9"), count: 64)),
            (.expiration, Array(repeating: UInt8(ascii: "0"), count: 65)),
            (.pool(.data, .maxSize), Array("-1".utf8)), (.pool(.data, .maxSize), Array("9223372036854775808".utf8)),
            (.pool(.data, .maxSize), Array("1K".utf8)), (.pool(.data, .defaultExpiration), Array("never".utf8)),
        ]
        for (attribute, value) in invalid {
            do {
                let assignment = try attribute.assignment(from: value)
                Issue.record("\(attribute.name) = \(value) was accepted as \(assignment)")
            } catch {
                #expect(error.code == .invalidValue, "\(attribute.name) = \(value): \(error)")
            }
        }
        // 64 zeros are a valid (if odd) zero; a megabyte is refused by its length alone.
        #expect(try ExtendedAttribute.expiration.assignment(from: Array(repeating: UInt8(ascii: "0"), count: 64)) == .expiration(0))
        let huge = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 1)
        defer { huge.deallocate() }
        huge.initializeMemory(as: UInt8.self, repeating: UInt8(ascii: "1"))
        #expect(throws: ExtendedAttribute.Failure(.invalidValue, "user.darkdisk.persistent: a value of 1048576 bytes is too long (at most 64)")) {
            try ExtendedAttribute.persistent.assignment(from: UnsafeRawBufferPointer(huge))
        }
        // A pin takes 0 or 1; `local` takes only `none` (drop the local copy).
        #expect(try ExtendedAttribute.pin.assignment(from: Array("1\n".utf8)) == .pin(true))
        #expect(try ExtendedAttribute.pin.assignment(from: Array("0".utf8)) == .pin(false))
        #expect(throws: ExtendedAttribute.Failure(.invalidValue, "user.darkdisk.pin takes 0 or 1")) { try ExtendedAttribute.pin.assignment(from: Array("2".utf8)) }
        #expect(try ExtendedAttribute.local.assignment(from: Array("none\n".utf8)) == .evict)
        #expect(throws: ExtendedAttribute.Failure(.invalidValue, "user.darkdisk.local can only be set to none (drop the local copy)")) {
            try ExtendedAttribute.local.assignment(from: Array("full".utf8))
        }
        #expect(ExtendedAttribute.Value.partial(percent: 42).text == "partial 42%")
        for readOnly in [ExtendedAttribute.sync, .pool(.data, .size), .pool(.avatars, .persistentSize), .pool(.thumbnails, .cachedSize)] {
            #expect(throws: ExtendedAttribute.Failure(.readOnly, "\(readOnly.name) is read-only")) {
                try readOnly.assignment(from: Array("0".utf8))
            }
        }
    }

    /// Random byte strings over an alphabet of the tricky bytes: the parser accepts exactly what the syntax
    /// allows (compared with a plain reading of it) and never crashes.
    @Test func integerSyntaxAgainstRandomBytes() {
        let alphabet: [UInt8] = Array("0123456789-+\n \r".utf8) + [0, 0xFF, UInt8(ascii: "9"), UInt8(ascii: "9")]
        var rng = SplitMix64(seed: 0xDA4D)
        var accepted = 0
        for _ in 0..<20_000 {
            let length = Int(rng.next() % 24)
            let bytes = (0..<length).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
            let result = try? ExtendedAttribute.integer(bytes, for: "test")
            var body = bytes[...]
            if body.last == UInt8(ascii: "\n") { body = body.dropLast() }
            let text = String(decoding: body, as: UTF8.self)
            let digits = text.hasPrefix("-") ? text.dropFirst() : text[...]
            let wellFormed = !digits.isEmpty && digits.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }
            let expected = wellFormed ? Int64(text) : nil
            #expect(result == expected, "\(bytes)")
            if result != nil { accepted += 1 }
        }
        #expect(accepted > 100, "the alphabet produces valid numbers too (\(accepted))")
    }

    @Test func valuesReadAsText() {
        #expect(ExtendedAttribute.Value.flag(true).text == "1")
        #expect(ExtendedAttribute.Value.flag(false).text == "0")
        #expect(ExtendedAttribute.Value.bytes(26_214_400).text == "26214400")
        #expect(ExtendedAttribute.Value.locality(.absent).text == "none")
        #expect(ExtendedAttribute.Value.locality(.partial).text == "partial")
        #expect(ExtendedAttribute.Value.locality(.full).text == "full")
        #expect(ExtendedAttribute.Value.seconds(604_800).text == "604800")
        #expect(ExtendedAttribute.Value.seconds(-1.5).text == "-1")
        #expect(ExtendedAttribute.Value.seconds(.infinity).text == "9223372036854775807")
        #expect(ExtendedAttribute.Value.seconds(-.infinity).text == "-9223372036854775808")
        #expect(ExtendedAttribute.Value.seconds(1e300).text == "9223372036854775807")
        #expect(ExtendedAttribute.Value.seconds(.nan).text == "0")
    }
}
