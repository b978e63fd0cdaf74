import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// An element of an S3 XML answer (a listing, an error, a multipart upload's ID) as a small tree, parsed
/// with Foundation's XMLParser; anything that is not well-formed XML parses to nil, never a crash.
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

    /// The document's root element, or nil if `data` is not well-formed XML.
    package static func parse(_ data: Data) -> S3XML? {
        // Foundation's XMLParser traps on an element name that is not valid UTF-8 (found by fuzzing: a hostile
        // server could stop the process). S3 answers are UTF-8, so anything else is refused unparsed.
        guard String(validating: data, as: UTF8.self) != nil else { return nil }
        // It also crashes on a processing instruction without data (`<?x?>`), and a DTD could declare entities
        // that expand without bound. S3 answers have neither: the only `<?` allowed is the declaration at the
        // very start (`<?xml` then whitespace), and no `<!` (DTD, comment, CDATA) at all.
        let space: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        if data.starts(with: Data("<?".utf8)) {
            guard data.starts(with: Data("<?xml".utf8)), data.count > 5, space.contains(data[data.startIndex + 5]) else { return nil }
        }
        guard data.count < 2 || data.range(of: Data("<?".utf8), in: (data.startIndex + 1)..<data.endIndex) == nil,
              data.range(of: Data("<!".utf8)) == nil else { return nil }
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        let builder = Builder()
        parser.delegate = builder
        guard parser.parse(), builder.stack.isEmpty else { return nil }
        return builder.root
    }

    /// Builds the tree from the parser's events: an element is pushed when it opens and attached to its
    /// parent when it closes.
    private final class Builder: NSObject, XMLParserDelegate {
        var stack: [S3XML] = []
        var root: S3XML?

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                    qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]) {
            stack.append(S3XML(name: elementName, text: "", children: []))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += string
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
            guard let element = stack.popLast() else { return }
            if stack.isEmpty { root = element } else { stack[stack.count - 1].children.append(element) }
        }
    }
}
