import DarkDisk
import DarkDiskCloud
import Foundation

/// The remote a store is attached to: the URL given to `init --remote`, else the embedded default, a
/// `file://` bucket inside the store's data folder (so everything works with nothing else running).
enum StoreRemote {
    static let settingKey = "remote"

    static func defaultURL(for location: StoreLocation) -> String {
        "file://" + location.dataDirectory + "/remote"
    }

    static func remote(for manager: DiskManager) throws -> any Remote {
        let url = try manager.text(settingKey) ?? defaultURL(for: manager.location)
        if url == defaultURL(for: manager.location) {
            try FileManager.default.createDirectory(atPath: manager.location.dataDirectory + "/remote", withIntermediateDirectories: true)
        }
        return try RemoteURL.remote(url)
    }
}
