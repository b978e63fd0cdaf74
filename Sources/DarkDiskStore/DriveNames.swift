import Foundation

/// The names a drive folder shows. Two nodes may hold one name in one folder (two machines
/// made them before either saw the other's): both show. The earliest made keeps the name; each later one
/// shows as `NAME (NODEID)`, the suffix before the extension (`report (n7f3).pdf`), so it stays the same
/// from one listing, mount or machine to the next, and a lookup finds its node again from the name alone.
/// Pure: no store, no FUSE.
package enum DriveNames {
    /// The longest name a drive entry may have, in bytes (`NAME_MAX`).
    package static let maximumLength = 255

    /// One child of a folder as the outline has it.
    package struct Child: Sendable, Equatable {
        package let id: NodeID
        package let name: String
        /// When the node was made; ties go to the smaller ID.
        package let created: Double

        package init(id: NodeID, name: String, created: Double) {
            self.id = id
            self.name = name
            self.created = created
        }
    }

    /// Each child with the name the folder shows it by, sorted by that name. Names stay unique: a shown
    /// name that another child holds as its own name is suffixed again.
    /// Names are compared as their bytes (`Bytes`), never as Unicode text: `café` in NFC and in NFD are two
    /// names, as on ext4. Sorted by those bytes.
    package static func shown(_ children: [Child]) -> [(id: NodeID, name: String)] {
        var byName: [Bytes: [Child]] = [:]
        for child in children { byName[Bytes(child.name), default: []].append(child) }
        var taken = Set(byName.keys)
        var shown: [(id: NodeID, name: String)] = []
        shown.reserveCapacity(children.count)
        for (name, holders) in byName {
            let ordered = holders.count == 1 ? holders : holders.sorted { ($0.created, $0.id.rawValue) < ($1.created, $1.id.rawValue) }
            shown.append((ordered[0].id, name.name))
            for later in ordered.dropFirst() {
                var suffixed = suffixed(name.name, id: later.id)
                while taken.contains(Bytes(suffixed)) { suffixed = Self.suffixed(suffixed, id: later.id) }
                taken.insert(Bytes(suffixed))
                shown.append((later.id, suffixed))
            }
        }
        return shown.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }

    /// A name as its bytes: equal, hashed and ordered byte for byte. (Swift's `String` takes canonically
    /// equivalent text as equal, so the NFC and NFD spellings of one word, two names on a disk, would be one.)
    package struct Bytes: Hashable, Sendable {
        package let name: String

        package init(_ name: String) { self.name = name }

        package static func == (a: Bytes, b: Bytes) -> Bool { a.name.utf8.elementsEqual(b.name.utf8) }

        package func hash(into hasher: inout Hasher) {
            for byte in name.utf8 { hasher.combine(byte) }
        }
    }

    /// Whether two names are the same bytes.
    package static func same(_ a: String, _ b: String) -> Bool { a.utf8.elementsEqual(b.utf8) }

    /// `name` with ` (ID)` before its extension, the base shortened (at a character boundary) so the whole
    /// stays within 255 bytes.
    package static func suffixed(_ name: String, id: NodeID) -> String {
        let suffix = " (\(id.rawValue))"
        let dot = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 }
        var base = dot.map { String(name[..<$0]) } ?? name
        var ext = dot.map { String(name[$0...]) } ?? ""
        if ext.utf8.count + suffix.utf8.count > maximumLength { ext = "" ; base = name }
        while base.utf8.count + suffix.utf8.count + ext.utf8.count > maximumLength, !base.isEmpty { base.removeLast() }
        return base + suffix + ext
    }

    /// The node ID a suffixed name carries (`report (n7f3).pdf` → `n7f3`), for a lookup of a name no child
    /// holds as its own; nil when the name has no such suffix.
    package static func suffixID(of shownName: String) -> NodeID? {
        let dot = shownName.lastIndex(of: ".")
        for end in [dot, shownName.endIndex].compactMap({ $0 }) {
            let head = shownName[..<end]
            guard head.hasSuffix(")"), let open = head.range(of: " (", options: .backwards) else { continue }
            if let id = try? NodeID(String(head[open.upperBound..<head.index(before: head.endIndex)])) { return id }
        }
        return nil
    }
}
