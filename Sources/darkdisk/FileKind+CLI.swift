import DarkDiskStore

extension FileKind {
    /// A node section named on the command line (`--kind`).
    static func parseNodeKind(_ text: String) throws -> FileKind {
        guard let kind = FileKind(rawValue: text), kind != .avatar else {
            throw CLIError("invalid --kind '\(text)': use data, thumbnail or metadata")
        }
        return kind
    }
}
