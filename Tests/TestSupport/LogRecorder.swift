import DarkDiskSync
import Logging

/// A log handler that keeps every message with its level, for tests that check what a component logs.
public struct LogRecorder: LogHandler {
    package let records: Locked<[(level: Logger.Level, text: String)]>
    public var logLevel: Logger.Level = .trace
    public var metadata: Logger.Metadata = [:]

    package init(records: Locked<[(level: Logger.Level, text: String)]>) {
        self.records = records
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        records.withLock { $0.append((event.level, "\(event.message)")) }
    }
}
