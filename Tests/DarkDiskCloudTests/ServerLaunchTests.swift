import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// How a test's server start fails says why: the suite's servers fail rarely, and only in CI.
@Suite(.ownThreads) struct ServerLaunchTests {
    @Test func aServerThatExitsIsTriedOnFivePortsAndEachExitIsNamed() throws {
        var ports: [Int] = []
        let outcome = try ServerLaunch.onFreePort(timeout: 30) { port in
            ports.append(port)
            return try ChildProcess.spawn("/bin/sh", ["-c", "exit 3"])
        }
        guard case .exited(let tries) = outcome else { Issue.record("\(outcome.description)"); return }
        #expect(tries.count == 5)
        #expect(Set(ports).count == 5, "one port per try: \(ports)")
        #expect(tries.allSatisfy { $0.contains("exit status 3") }, "\(tries)")
    }

    @Test func aServerThatNeverListensIsTriedOnceMoreThenDescribed() throws {
        var started = 0
        let outcome = try ServerLaunch.onFreePort(timeout: 0.5) { _ in
            started += 1
            return try ChildProcess.spawn("/bin/sleep", ["30"])
        }
        guard case .timedOut(_, let diagnosis) = outcome else { Issue.record("\(outcome.description)"); return }
        #expect(started == 2)
        #expect(diagnosis.contains("alive with sockets []") && diagnosis.contains("does not answer"), "\(diagnosis)")
        #expect(outcome.description.contains("before that"), "both tries are described: \(outcome.description)")
    }

    @Test func aServerListeningOnItsPortIsStarted() throws {
        let outcome = try ServerLaunch.onFreePort(timeout: 30) { port in
            try ChildProcess.spawn("/usr/bin/python3", ["-m", "http.server", "--bind", "127.0.0.1", String(port)])
        }
        guard case .listening(let port, let pid) = outcome else { Issue.record("\(outcome.description)"); return }
        defer { kill(pid, SIGKILL); _ = ChildProcess.wait(pid) }
        #expect(Nginx.canConnect(port))
    }
}
