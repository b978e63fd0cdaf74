/// Validation shared by the ID types: IDs become database keys and log text, never path components,
/// but are still restricted so that no ID can smuggle path separators or control characters.
enum ValidatedID {
    static func check(_ value: String, what: String, extra: Set<UInt8> = []) throws(DarkDiskError) {
        let bytes = Array(value.utf8)
        guard !bytes.isEmpty, bytes.count <= 64 else {
            throw DarkDiskError(.invalidID, "invalid \(what) '\(printable(value))': must be 1 to 64 characters")
        }
        for b in bytes {
            let ok = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || extra.contains(b)
            guard ok else {
                let allowed = "A-Z a-z 0-9 _ -" + extra.sorted().map { " " + String(UnicodeScalar($0)) }.joined()
                throw DarkDiskError(.invalidID, "invalid \(what) '\(printable(value))': allowed characters are \(allowed)")
            }
        }
    }

    /// A short, control-character-free rendering of untrusted input for error messages.
    static func printable(_ value: String) -> String {
        let cleaned = String(value.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
        return cleaned.count > 40 ? String(cleaned.prefix(40)) + "…" : cleaned
    }
}
