import DarkDiskStore
import DarkDiskSync

/// The stores a command opened. Eviction after an import or a download runs on the store's maintenance
/// queue, after the call returns; before the process exits it waits for that upkeep, so a command leaves
/// every pool within its limit.
enum OpenedStores {
    private static let managers = Locked<[DiskManager]>([])

    static func add(_ manager: DiskManager) {
        managers.withLock { $0.append(manager) }
    }

    /// Waits for the upkeep each opened store has queued, and removes the scratch files it kept.
    static func finishUpkeep() {
        for manager in managers.withLock({ $0 }) {
            manager.files.waitForMaintenance()
            manager.releaseScratchFiles()
        }
    }
}
