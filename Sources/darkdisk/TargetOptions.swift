import ArgumentParser

/// What `import`, `fetch` and `delete` act on: `--node ID [--kind KIND]`, or `--user ID [--identity ID]`.
struct TargetOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The node to act on.", valueName: "ID"))
    var node: String?

    @Option(help: ArgumentHelp("Which section of the node: data, thumbnail or metadata (import and fetch: data by default; delete: every section by default).", valueName: "KIND"))
    var kind: String?

    @Option(help: ArgumentHelp("A user, to act on an avatar instead of a node.", valueName: "ID"))
    var user: String?

    @Option(help: ArgumentHelp("The user's identity whose avatar to act on.", valueName: "ID"))
    var identity: String?

    /// The target; `identityRequired` false lets `--user` alone stand for the user's display identity.
    func target(identityRequired: Bool = true) throws -> FileTarget {
        try FileTarget.parse(node: node, kind: kind, user: user, identity: identity, identityRequired: identityRequired)
    }
}
