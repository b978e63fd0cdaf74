import DarkDiskVFS

extension FuzzTarget {
    /// Input: byte 0 picks an attribute (or, when ≥ 128, the rest is an attribute name to look up); the
    /// rest is the value `setfattr` writes. An accepted value must be short, and an integer must read back
    /// as the same decimal text (without the optional final newline).
    static func xattr(_ input: [UInt8]) {
        guard let first = input.first else { return }
        let rest = Array(input.dropFirst())
        if first >= 128 {
            if let attribute = ExtendedAttribute(name: rest), Array(attribute.name.utf8) != rest {
                fatalError("xattr: the name \(rest) matched \(attribute.name)")
            }
            return
        }
        let attribute = ExtendedAttribute.all[Int(first) % ExtendedAttribute.all.count]
        guard let assignment = try? attribute.assignment(from: rest) else { return }
        if rest.count > ExtendedAttribute.maxValueLength { fatalError("xattr: a \(rest.count)-byte value was accepted") }
        var digits = rest
        if digits.last == UInt8(ascii: "\n") { digits.removeLast() }
        let text: String
        switch assignment {
        case .persistent(let on): text = on ? "1" : "0"
        case .expiration(let seconds), .defaultExpiration(_, let seconds): text = String(seconds)
        case .maxSize(_, let bytes): text = String(bytes)
        case .pin(let on): text = on ? "1" : "0"
        case .evict:
            guard digits == Array("none".utf8) else { fatalError("xattr: \(attribute.name) accepted \(rest) as none") }
            return
        }
        // Leading zeros and "-0" are accepted spellings of the same number.
        guard let parsed = try? ExtendedAttribute.integer(Array(text.utf8), for: attribute.name),
              parsed == (try? ExtendedAttribute.integer(digits, for: attribute.name)) else {
            fatalError("xattr: \(attribute.name) accepted \(rest) as \(text), which does not read back")
        }
    }
}
