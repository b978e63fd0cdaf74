import DarkDiskSync

/// Cache files' last accesses noted by a mount daemon's opens, written into the index together a moment
/// later instead of one write transaction per open (`cat` of 5,000 small synced files paid 5,000). The
/// daemon's own eviction writes them first, so its least-recently-used order is exact; another process's
/// eviction sees them at most `delay` late. A process that does not journal the drive (a command, a library
/// user) writes each access at once, as before.
final class AccessTimes: Sendable {
    /// How long an access waits for others before they are written.
    static let delay = 0.25
    private let pending = Locked<(times: [Int64: Double], scheduled: Bool)>(([:], false))

    /// Notes that file row `id` was accessed at `time`; whether a write of the accesses must be scheduled.
    func note(_ id: Int64, at time: Double) -> Bool {
        pending.withLock { state in
            state.times[id] = max(state.times[id] ?? 0, time)
            defer { state.scheduled = true }
            return !state.scheduled
        }
    }

    /// The accesses noted so far, to write now.
    func take() -> [Int64: Double] {
        pending.withLock { state in
            defer { state = ([:], false) }
            return state.times
        }
    }
}
