import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Starting a test's server on a free port. A free port is bound and closed first, so another server may
/// bind it before this one: the server then gives up on it, and a check that the port answers would pass
/// for the other server. Only the server's own listener counts (`Nginx.listens`), and a server that exits
/// is started again on another port.
public enum ServerLaunch {
    public enum Outcome {
        case listening(port: Int, pid: pid_t)
        /// The server exited on each of the ports tried.
        case exited
        /// The server ran without listening within the time allowed (it was killed).
        case timedOut(port: Int)
    }

    /// Starts a server with `start(port)` (its process ID) until its own process listens there, each try for
    /// at most `timeout` seconds, on at most five ports.
    public static func onFreePort(timeout: Double, _ start: (Int) throws -> pid_t) throws -> Outcome {
        for _ in 0..<5 {
            let port = try Nginx.freePort()
            let child = try start(port)
            let deadline = Date().addingTimeInterval(timeout)
            var status: Int32 = 0
            var exited = false
            while Date() < deadline {
                if Nginx.listens(child, on: port) { return .listening(port: port, pid: child) }
                if waitpid(child, &status, WNOHANG) == child { exited = true; break }
                Thread.sleep(forTimeInterval: 0.05)
            }
            if !exited {
                kill(child, SIGKILL)
                waitpid(child, &status, 0)
                return .timedOut(port: port)
            }
        }
        return .exited
    }
}
