import DarkDiskStore
import Foundation
import Testing

/// New nodes' IDs: version-4 UUIDs in lower case (what the remote's records and other machines expect),
/// valid node IDs, and not repeated.
@Suite struct NodeIDTests {
    @Test func aRandomIDIsALowerCaseVersion4UUID() throws {
        var seen = Set<String>()
        for _ in 0..<2_000 {
            let id = NodeID.random().rawValue
            #expect(id.wholeMatch(of: /[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/) != nil, "\(id)")
            // Foundation reads it back as the same UUID, and the node-ID check takes it.
            #expect(UUID(uuidString: id)?.uuidString.lowercased() == id)
            #expect(try NodeID(id).rawValue == id)
            seen.insert(id)
        }
        #expect(seen.count == 2_000)
    }

    @Test func everyHexDigitAppearsInEveryFreePosition() {
        // A formatting slip (a nibble dropped or repeated) would leave some position with a fixed digit.
        var digitsAt = [Set<Character>](repeating: [], count: 36)
        for _ in 0..<3_000 {
            for (index, character) in NodeID.random().rawValue.enumerated() { digitsAt[index].insert(character) }
        }
        for index in 0..<36 {
            switch index {
            case 8, 13, 18, 23: #expect(digitsAt[index] == ["-"])
            case 14: #expect(digitsAt[index] == ["4"])
            case 19: #expect(digitsAt[index] == ["8", "9", "a", "b"])
            default: #expect(digitsAt[index].count == 16, "position \(index): \(digitsAt[index].sorted())")
            }
        }
    }
}
