import DarkDiskSystem
/// A usage or environment problem found by the command line itself; printed as one line.
struct CLIError: DarkDiskFailure {
    let message: String
    init(_ message: String) { self.message = message }
}
