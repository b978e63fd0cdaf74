import DarkDiskStore
import DarkDiskCloud
import DarkDiskRemote
import DarkDiskSync
import DarkDiskTestSupport
import Foundation
import Logging
import Testing

/// The remote's health as the mount tells it: one warning when an outage begins and one notice when it
/// ends; a remote that drops again within a minute of coming back (a server recovering by halves) is the
/// same trouble, told at debug level, so the log does not flap between the two.
@Suite struct RemoteHealthTests {
    @Test func anOutageRightAfterAnotherIsToldQuietly() throws {
        let setup = try CloudTests.Setup()
        let records = Locked<[(level: Logger.Level, text: String)]>([])
        let logger = Logger(label: "health") { _ in LogRecorder(records: records) }
        // (No probe within the test: the outages end when the test says so.)
        let health = RemoteHealth(remote: setup.remote, manager: setup.a, probeInterval: 3600, logger: logger)
        let down = RemoteError(.unreachable, "the server stopped answering")
        for _ in 1...3 {
            health.noteFailure(down)
            #expect(health.isOffline)
            health.noteSuccess()
            #expect(!health.isOffline)
        }
        let told = records.withLock { $0.filter { $0.level >= .notice } }
        #expect(told.count == 2 && told[0].level == .warning && told[0].text.contains("unreachable")
                && told[1].level == .notice && told[1].text.contains("answers again"), "\(told.map(\.text))")
        #expect(records.withLock { $0.filter { $0.level == .debug }.count } == 4, "the two outages after the first are told at debug level")
    }
}
