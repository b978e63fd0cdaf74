import DarkDiskStore
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Shows a download manager's transfers in flight to the store's other processes, so that `darkdisk status`
/// lists what a mount daemon is downloading: while any transfer runs, a timer rewrites
/// `StoreLocation.transferBoard/<pid>.json` (by rename, so a reader never sees half a file); when none runs,
/// or the board stops, the file goes. A reader ignores (and removes) the file of a process that is gone.
/// The file is named by the process: keep one board per process and store.
package final class TransferBoard: @unchecked Sendable {
    // @unchecked: the timer source is only touched through its own thread-safe API; the rest is immutable.
    private let downloads: DownloadManager
    private let path: String
    private let queue = DispatchQueue(label: "darkdisk.transfer-board")
    private let timer: DispatchSourceTimer

    /// One process' transfers as its board last showed them.
    package struct Entry: Sendable, Codable, Equatable {
        package let pid: Int32
        package let updated: Date
        package let transfers: [TransferStatus]
    }

    /// Starts publishing every `interval` seconds.
    package init(downloads: DownloadManager, interval: Double = 0.5) {
        self.downloads = downloads
        path = downloads.manager.location.transferBoard + "/\(getpid()).json"
        timer = DispatchSource.makeTimerSource(queue: queue)
        let period = DispatchTimeInterval.milliseconds(Int(interval * 1000))
        timer.schedule(deadline: .now() + period, repeating: period, leeway: .milliseconds(100))
        timer.setEventHandler { [weak self] in self?.publish() }
        timer.resume()
    }

    /// Stops the timer and removes this process' file.
    package func stop() {
        timer.cancel()
        queue.sync { _ = unlink(path) }
    }

    deinit {
        timer.cancel()
        unlink(path)
    }

    private func publish() {
        let transfers = downloads.transfersInFlight
        guard !transfers.isEmpty else {
            unlink(path)
            return
        }
        let entry = Entry(pid: getpid(), updated: Date(), transfers: transfers)
        guard let data = try? JSONEncoder().encode(entry) else { return }
        let folder = (path as NSString).deletingLastPathComponent
        // The cache folder may have been purged: make the board's folder again.
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = path + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]),
              rename(temporary, path) == 0 else {
            unlink(temporary)
            return
        }
    }

    /// What every live process of the store (other than this one) is downloading now, by process.
    package static func read(_ location: StoreLocation) -> [Entry] {
        let folder = location.transferBoard
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return [] }
        var entries: [Entry] = []
        for name in names.sorted() where name.hasSuffix(".json") {
            let path = folder + "/" + name
            guard let pid = Int32(name.dropLast(5)), pid != getpid() else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH {
                unlink(path)  // left by a process that died (kill -9)
                continue
            }
            guard let data = FileManager.default.contents(atPath: path),
                  let entry = try? JSONDecoder().decode(Entry.self, from: data), entry.pid == pid else { continue }
            entries.append(entry)
        }
        return entries
    }
}
