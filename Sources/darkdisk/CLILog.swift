import Foundation
import Logging

/// Log set-up for the command line: warnings only for one-shot commands, info for the mount daemon;
/// `DARKDISK_LOG_LEVEL` (trace … critical) overrides both. Under systemd the lines carry journald priorities.
enum CLILog {
    static let cli: Logger = make(label: "darkdisk", defaultLevel: .warning)

    static func make(label: String, defaultLevel: Logger.Level) -> Logger {
        let journal = JournalLogHandler.isJournalStream()
        var logger = Logger(label: label) { label in
            journal ? JournalLogHandler(label: label) as any LogHandler : StreamLogHandler.standardError(label: label)
        }
        let level = ProcessInfo.processInfo.environment["DARKDISK_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
        logger.logLevel = level ?? defaultLevel
        return logger
    }
}
