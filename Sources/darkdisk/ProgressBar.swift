import DarkDiskCloud
import Foundation
import DarkDiskSync

/// A one-line progress bar on stderr: bar, percentage, bytes, rate and time left. `finish` ends its line
/// once (so an error printed after it starts on a line of its own); a bar never shown prints nothing.
final class ProgressBar: Sendable {
    private let state = Locked((shown: false, finished: false))

    func show(_ progress: DownloadProgress) {
        guard begin() else { return }
        let width = 30
        let filled = Int(progress.fractionCompleted * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
        let eta = progress.estimatedTimeRemaining.map { "ETA \(Int($0.rounded()))s" } ?? ""
        let line = "\r[\(bar)] \(Int(progress.fractionCompleted * 100))% \(Self.bytes(progress.completedBytes))/\(Self.bytes(progress.totalBytes)) \(Self.bytes(UInt64(progress.throughput)))/s \(eta)   "
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// A bar of items: "[####      ] 40% 4/10 nodes".
    func show(done: Int, of total: Int, _ what: String) {
        guard begin() else { return }
        let width = 30
        let fraction = total == 0 ? 1 : Double(done) / Double(total)
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
        FileHandle.standardError.write(Data("\r[\(bar)] \(Int(fraction * 100))% \(done)/\(total) \(what)   ".utf8))
    }

    /// Marks the bar shown; false once it was finished (nothing more is drawn).
    private func begin() -> Bool {
        state.withLock { state in
            if state.finished { return false }
            state.shown = true
            return true
        }
    }

    func finish() {
        let shown = state.withLock { state in
            defer { state.finished = true }
            return state.shown && !state.finished
        }
        if shown { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    static func bytes(_ count: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 { value /= 1024; unit += 1 }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }
}
