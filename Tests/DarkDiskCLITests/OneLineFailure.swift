import Testing

/// The standard for bad input on the command line: a non-zero exit and exactly one line on stderr,
/// `darkdisk: …`, that mentions `text`.
func expectOneLineFailure(_ run: Run, mentioning text: String, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(run.status != 0, "exit status", sourceLocation: sourceLocation)
    #expect(run.stderrLines.count == 1, "stderr: \(run.stderr)", sourceLocation: sourceLocation)
    #expect(run.stderr.hasPrefix("darkdisk: "), "stderr: \(run.stderr)", sourceLocation: sourceLocation)
    #expect(run.stderr.contains(text), "stderr: \(run.stderr)", sourceLocation: sourceLocation)
}
