import DarkDiskStore
import Testing

/// `DriveNames` on its own: two nodes with one name in one folder both show, the earlier with the name, the
/// later as `NAME (ID).EXT`, within 255 bytes, and a suffixed name leads back to its node.
@Suite struct DriveNamesTests {
    static func child(_ id: String, _ name: String, _ created: Double) throws -> DriveNames.Child {
        DriveNames.Child(id: try NodeID(id), name: name, created: created)
    }

    @Test func theEarliestKeepsTheNameAndTheOthersShowASuffix() throws {
        let shown = DriveNames.shown([try Self.child("b2", "report.pdf", 20), try Self.child("a1", "report.pdf", 10),
                                      try Self.child("c3", "report.pdf", 20), try Self.child("d4", "notes", 5), try Self.child("e5", ".bashrc", 1)])
        #expect(shown.map { "\($0.name)=\($0.id)" } == [".bashrc=e5", "notes=d4", "report (b2).pdf=b2", "report (c3).pdf=c3", "report.pdf=a1"])
        // Same input in another order: the same names (stable from one listing to the next).
        let again = DriveNames.shown([try Self.child("c3", "report.pdf", 20), try Self.child("a1", "report.pdf", 10), try Self.child("b2", "report.pdf", 20)])
        #expect(again.map(\.name) == ["report (b2).pdf", "report (c3).pdf", "report.pdf"])
    }

    @Test func aSuffixedNameThatAnotherNodeHoldsIsSuffixedAgain() throws {
        let shown = DriveNames.shown([try Self.child("a1", "x.txt", 1), try Self.child("b2", "x.txt", 2), try Self.child("c3", "x (b2).txt", 3)])
        #expect(Set(shown.map(\.name)) == ["x.txt", "x (b2).txt", "x (b2) (b2).txt"])
        #expect(Set(shown.map(\.id.rawValue)) == ["a1", "b2", "c3"])
        #expect(shown.first { $0.id.rawValue == "c3" }?.name == "x (b2).txt", "a node's own name is never taken from it")
    }

    @Test func suffixesStayWithin255BytesAndLeadBackToTheNode() throws {
        let id = try NodeID(String(repeating: "z", count: 64))
        for name in [String(repeating: "é", count: 127), String(repeating: "a", count: 250) + ".txt", "." + String(repeating: "b", count: 254), "plain"] {
            let suffixed = DriveNames.suffixed(name, id: id)
            #expect(suffixed.utf8.count <= 255, "\(name.utf8.count) bytes")
            #expect(DriveNames.suffixID(of: suffixed) == id, "\(suffixed)")
        }
        #expect(DriveNames.suffixed("archive.tar.gz", id: try NodeID("n1")) == "archive.tar (n1).gz")
        #expect(DriveNames.suffixID(of: "report.pdf") == nil && DriveNames.suffixID(of: "a (not an id!).txt") == nil)
    }
}
