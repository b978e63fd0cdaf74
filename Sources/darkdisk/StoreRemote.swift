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

    /// The store's remote URL, and whether it is the embedded default (no remote was set).
    static func url(for manager: DiskManager) throws -> (url: String, isDefault: Bool) {
        if let url = try manager.text(settingKey) { return (url, url == defaultURL(for: manager.location)) }
        return (defaultURL(for: manager.location), true)
    }

    static func remote(for manager: DiskManager) throws -> any Remote {
        let url = try self.url(for: manager).url
        if url == defaultURL(for: manager.location) {
            try FileManager.default.createDirectory(atPath: manager.location.dataDirectory + "/remote", withIntermediateDirectories: true)
        }
        return try RemoteURL.remote(url)
    }
}
