#if canImport(Glibc)
import Glibc
#endif

/// systemd's readiness protocol (`sd_notify(3)`), without libsystemd: a datagram with `READY=1`,
/// `STOPPING=1` or `STATUS=…` to the socket named by `NOTIFY_SOCKET` (a path, or `@name` in the abstract
/// namespace). Outside a `Type=notify` unit the variable is unset and nothing is sent.
package enum SystemdNotify {
    /// Sends `state` (lines of `KEY=VALUE`); returns whether it was sent.
    @discardableResult
    package static func send(_ state: String, environment: [String: String] = ProcessEnvironment.current) -> Bool {
        guard let socketPath = environment["NOTIFY_SOCKET"], !socketPath.isEmpty,
              socketPath.hasPrefix("/") || socketPath.hasPrefix("@") else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { try? SystemCall.close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // the abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count)
        let sent = state.utf8CString.withUnsafeBufferPointer { text in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                    sendto(fd, text.baseAddress, text.count - 1, Int32(MSG_NOSIGNAL), address, length)
                }
            }
        }
        return sent == state.utf8.count
    }
}

/// The process's environment as a dictionary, read when asked (no Foundation in this module).
package enum ProcessEnvironment {
    package static var current: [String: String] {
        var result: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return result
    }
}
