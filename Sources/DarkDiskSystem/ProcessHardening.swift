import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// Keeps a process that holds keys from leaking them through the system: no core dump (a crash would
/// write the master key to disk), and no other process of the same user may attach to it or read its
/// memory (`ptrace`, `/proc/PID/mem`, `/proc/PID/fd`), as ssh-agent and gpg-agent do. The command line
/// applies it first thing; a program that links the library and holds a store open may call it too.
package enum ProcessHardening {
    /// Turns core dumps off (soft and hard limit 0) and makes the process non-dumpable
    /// (`PR_SET_DUMPABLE` 0). Returns what could not be done, if anything (never fatal: the store still
    /// works, only less sealed off).
    @discardableResult
    package static func apply() -> [String] {
        var problems: [String] = []
        var none = rlimit(rlim_cur: 0, rlim_max: 0)
        if setrlimit(Int32(RLIMIT_CORE.rawValue), &none) != 0 {
            problems.append("cannot turn core dumps off: \(String(cString: strerror(errno)))")
        }
        if darkdisk_set_dumpable(0) != 0 {
            problems.append("cannot make the process non-dumpable: \(String(cString: strerror(errno)))")
        }
        return problems
    }
}

extension ProcessHardening {
    /// Whether this process may dump core or be attached to by its user (`PR_GET_DUMPABLE`).
    package static var isDumpable: Bool { darkdisk_get_dumpable() != 0 }
}
