import Foundation

/// An element of an S3 XML answer (a listing, an error, a multipart upload's ID) as a small tree.
///
/// The parser is our own, for the subset of XML that S3 servers send: an optional `<?xml …?>` declaration
/// (after any whitespace),
/// elements with attributes (ignored), text with the five predefined entities and character references.
/// Anything else (a DTD, a comment, CDATA, a processing instruction, an undefined entity, a second root,
/// mismatched tags, nesting deeper than 32, bytes that are not UTF-8) parses to nil, never a crash.
/// Foundation's XMLParser was used before: fuzzing found it trapping on invalid UTF-8 in a name and
/// dereferencing NULL on a processing instruction without data, and it leaked memory on every document
/// it refused, so a hostile server could stop or bloat the process.
package struct S3XML: Sendable {
    package let name: String
    package var text: String
    package var children: [S3XML]

    /// The first child element called `name`.
    func child(_ name: String) -> S3XML? { children.first { $0.name == name } }

    /// Every child element called `name`, in document order.
    func children(_ name: String) -> [S3XML] { children.filter { $0.name == name } }

    /// The text of the first child element called `name`.
    package func text(_ name: String) -> String? { child(name)?.text }

    /// The deepest nesting accepted (S3 answers nest three or four levels).
    static let maxDepth = 32

    /// The document's root element, or nil if `data` is not a well-formed document of the subset above.
    package static func parse(_ data: Data) -> S3XML? {
        guard String(validating: data, as: UTF8.self) != nil else { return nil }
        var parser = Parser(bytes: Array(data))
        return parser.document()
    }

    /// A single pass over the bytes with an explicit stack of open elements (no recursion).
    private struct Parser {
        let bytes: [UInt8]
        var at = 0

        init(bytes: [UInt8]) {
            self.bytes = bytes
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { at = 3 }  // a UTF-8 byte order mark
        }

        mutating func document() -> S3XML? {
            // Not well-formed XML, but sent: S3 and MinIO keep a slow CompleteMultipartUpload's connection
            // alive with whitespace before the answer's declaration.
            skipSpace()
            if starts(with: "<?") {
                // Only the declaration, at the very start: `<?xml` then whitespace, up to `?>`.
                guard starts(with: "<?xml"), at + 5 < bytes.count, Self.isSpace(bytes[at + 5]),
                      let end = find("?>", from: at + 5) else { return nil }
                at = end + 2
            }
            var stack: [S3XML] = []
            var root: S3XML?
            while at < bytes.count {
                if bytes[at] != UInt8(ascii: "<") {
                    guard let text = characterData() else { return nil }
                    if stack.isEmpty {
                        guard text.utf8.allSatisfy(Self.isSpace) else { return nil }
                    } else {
                        stack[stack.count - 1].text += text
                    }
                    continue
                }
                at += 1
                guard at < bytes.count else { return nil }
                switch bytes[at] {
                case UInt8(ascii: "/"):
                    at += 1
                    guard let closing = name(), let element = stack.popLast(), element.name == closing else { return nil }
                    skipSpace()
                    guard at < bytes.count, bytes[at] == UInt8(ascii: ">") else { return nil }
                    at += 1
                    if stack.isEmpty { root = element } else { stack[stack.count - 1].children.append(element) }
                case UInt8(ascii: "?"), UInt8(ascii: "!"):
                    return nil  // processing instructions, DTDs, comments, CDATA
                default:
                    guard root == nil, stack.count < S3XML.maxDepth, let opening = name(), let empty = attributes() else { return nil }
                    let element = S3XML(name: opening, text: "", children: [])
                    if !empty {
                        stack.append(element)
                    } else if stack.isEmpty {
                        root = element
                    } else {
                        stack[stack.count - 1].children.append(element)
                    }
                }
            }
            return stack.isEmpty ? root : nil
        }

        /// An element or attribute name: one or more bytes that are none of whitespace and `<>/=&"'?!`,
        /// not starting with a digit, `-` or `.`.
        mutating func name() -> String? {
            let start = at
            while at < bytes.count, !Self.isSpace(bytes[at]), !"<>/=&\"'?!".utf8.contains(bytes[at]) { at += 1 }
            guard at > start, !"0123456789-.".utf8.contains(bytes[start]) else { return nil }
            return String(decoding: bytes[start..<at], as: UTF8.self)
        }

        /// The attributes after an element's name, up to `>` (returns false) or `/>` (returns true, an empty
        /// element); nil if malformed. Their values are checked and dropped.
        mutating func attributes() -> Bool? {
            while true {
                let spaced = skipSpace()
                guard at < bytes.count else { return nil }
                if bytes[at] == UInt8(ascii: ">") { at += 1; return false }
                if starts(with: "/>") { at += 2; return true }
                guard spaced, name() != nil else { return nil }
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "=") else { return nil }
                at += 1
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") || bytes[at] == UInt8(ascii: "'") else { return nil }
                let quote = bytes[at]
                at += 1
                while at < bytes.count, bytes[at] != quote {
                    guard bytes[at] != UInt8(ascii: "<") else { return nil }
                    if bytes[at] == UInt8(ascii: "&") {
                        guard entity() != nil else { return nil }
                    } else {
                        guard Self.isAllowed(bytes[at]) else { return nil }
                        at += 1
                    }
                }
                guard at < bytes.count else { return nil }
                at += 1
            }
        }

        /// Text up to the next `<` (or the end), entities resolved; nil if it holds a control character or
        /// a bad entity.
        mutating func characterData() -> String? {
            var text = ""
            var run = at
            while at < bytes.count, bytes[at] != UInt8(ascii: "<") {
                if bytes[at] == UInt8(ascii: "&") {
                    text += String(decoding: bytes[run..<at], as: UTF8.self)
                    guard let scalar = entity() else { return nil }
                    text.unicodeScalars.append(scalar)
                    run = at
                } else {
                    guard Self.isAllowed(bytes[at]) else { return nil }
                    at += 1
                }
            }
            text += String(decoding: bytes[run..<at], as: UTF8.self)
            return text
        }

        /// `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`, `&#N;` or `&#xH;` (a character XML allows).
        mutating func entity() -> Unicode.Scalar? {
            guard let end = bytes[at...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else { return nil }
            let body = String(decoding: bytes[(at + 1)..<end], as: UTF8.self)
            at = end + 1
            switch body {
            case "amp": return "&"
            case "lt": return "<"
            case "gt": return ">"
            case "quot": return "\""
            case "apos": return "'"
            default:
                var digits = Substring(body)
                guard digits.first == "#" else { return nil }
                digits = digits.dropFirst()
                var radix = 10
                if digits.first == "x" { radix = 16; digits = digits.dropFirst() }
                guard !digits.isEmpty, digits.allSatisfy({ $0.isHexDigit && (radix == 16 || $0.isNumber) }),
                      let value = UInt32(digits, radix: radix), let scalar = Unicode.Scalar(value),
                      value == 0x9 || value == 0xA || value == 0xD || (value >= 0x20 && value != 0xFFFE && value != 0xFFFF) else { return nil }
                return scalar
            }
        }

        /// Skips whitespace; whether there was any.
        @discardableResult
        mutating func skipSpace() -> Bool {
            let start = at
            while at < bytes.count, Self.isSpace(bytes[at]) { at += 1 }
            return at > start
        }

        func starts(with text: String) -> Bool { bytes[at...].starts(with: text.utf8) }

        func find(_ text: String, from start: Int) -> Int? {
            let needle = Array(text.utf8)
            var i = start
            while i + needle.count <= bytes.count {
                if bytes[i] == needle[0], bytes[i..<i + needle.count].elementsEqual(needle) { return i }
                i += 1
            }
            return nil
        }

        static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

        /// A byte XML allows in text: not a control character other than tab, line feed and carriage return.
        static func isAllowed(_ byte: UInt8) -> Bool { byte >= 0x20 || isSpace(byte) }
    }
}
