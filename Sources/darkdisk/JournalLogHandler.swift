import Foundation
import Logging

/// Log lines for journald when standard error is its stream (a systemd unit): each line starts with its
/// syslog priority (`<3>` error … `<7>` debug), which journald takes as the entry's priority and strips, so
/// `journalctl -p warning` finds the warnings. Elsewhere the usual timestamped lines are written.
struct JournalLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Whether standard error is journald's stream: systemd sets `JOURNAL_STREAM` to its `DEVICE:INODE`.
    static func isJournalStream(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        var st = stat()
        guard fstat(STDERR_FILENO, &st) == 0 else { return false }
        return stream == "\(st.st_dev):\(st.st_ino)"
    }

    /// The syslog priority of `level`.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    func log(event: LogEvent) {
        let source = event.source.isEmpty ? "" : "[\(event.source)] "
        // One entry per line: journald splits on newlines, and each line needs its own priority.
        let text = "\(event.message)".split(separator: "\n", omittingEmptySubsequences: false)
            .map { "<\(Self.priority(event.level))>\(source)\($0)\n" }.joined()
        FileHandle.standardError.write(Data(text.utf8))
    }
}
