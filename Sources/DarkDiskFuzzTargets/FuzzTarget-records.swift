import DarkDiskStore
import DarkDiskCloud
import Foundation

extension FuzzTarget {
    static func records(_ input: [UInt8]) {
        let data = Data(input)
        let node = try! NodeID("node-1")
        if let record = try? NodeRecord.parse(data, expected: node) {
            if record.nodeID != node.rawValue { fatalError("records: a record for '\(record.nodeID)' was accepted as 'node-1'") }
            if let entry = try? record.outlineEntry(), entry.nodeID != node { fatalError("records: the outline entry names another node") }
        }
        let user = try! UserID("user-1")
        if let record = try? UserRecord.parse(data, expected: user) {
            if record.userID != user.rawValue { fatalError("records: a user record for '\(record.userID)' was accepted as 'user-1'") }
            for identity in record.identities where (try? IdentityID(identity.identityID)) == nil {
                fatalError("records: a user record with the invalid identity '\(identity.identityID)' was accepted")
            }
        }
    }

    /// An accepted ID must be a safe single path component: 1 to 64 bytes of the allowed characters, never
    /// `.` or `..`, no `/`, no NUL, no control character.
    static func ids(_ input: [UInt8]) {
        guard let text = String(validating: input, as: UTF8.self) else { return }
        let accepted: [String] = [(try? NodeID(text))?.rawValue, (try? UserID(text))?.rawValue, (try? IdentityID(text))?.rawValue].compactMap { $0 }
        for id in accepted {
            let bytes = Array(id.utf8)
            let safe = !bytes.isEmpty && bytes.count <= 64 && id != "." && id != ".."
                && bytes.allSatisfy { $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "\\") }
            if !safe { fatalError("ids: the unsafe ID \(bytes) was accepted") }
        }
    }
}
