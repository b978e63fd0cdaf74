import Foundation

/// Where a store keeps its three kinds of state: persistent data and the index, the cache pool
/// (which anyone may delete at any time), and the key.
public struct StoreLocation: Sendable, Equatable {
    /// Persistent files, the index database and the daemon log.
    public let dataDirectory: String
    /// Cache-pool files.
    public let cacheDirectory: String
    /// The master key file.
    public let configDirectory: String

    public init(dataDirectory: String, cacheDirectory: String, configDirectory: String) {
        self.dataDirectory = dataDirectory
        self.cacheDirectory = cacheDirectory
        self.configDirectory = configDirectory
    }

    /// Everything under one folder (`--store DIR`).
    public init(directory: String) {
        let root = StoreLocation.absolute(directory)
        self.init(dataDirectory: root + "/data", cacheDirectory: root + "/cache", configDirectory: root + "/config")
    }

    /// The store named `name` in the XDG base directories.
    public static func xdg(name: String = "default", environment: [String: String] = ProcessInfo.processInfo.environment) -> StoreLocation {
        let home = environment["HOME"] ?? NSHomeDirectory()
        func base(_ variable: String, _ fallback: String) -> String {
            if let value = environment[variable], value.hasPrefix("/") { return value }
            return home + "/" + fallback
        }
        return StoreLocation(
            dataDirectory: base("XDG_DATA_HOME", ".local/share") + "/darkdisk/" + name,
            cacheDirectory: base("XDG_CACHE_HOME", ".cache") + "/darkdisk/" + name,
            configDirectory: base("XDG_CONFIG_HOME", ".config") + "/darkdisk/" + name)
    }

    /// `--store DIR` if given, else `DARKDISK_STORE`, else the XDG default store.
    public static func resolve(store: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> StoreLocation {
        if let store, !store.isEmpty { return StoreLocation(directory: store) }
        if let store = environment["DARKDISK_STORE"], !store.isEmpty { return StoreLocation(directory: store) }
        return xdg(environment: environment)
    }

    public var indexPath: String { dataDirectory + "/index.sqlite" }
    public var keyPath: String { configDirectory + "/master.key" }
    public var logPath: String { dataDirectory + "/darkdisk.log" }
    /// Persistent encrypted files (same file system as `persistentStaging`, so imports land by rename).
    public var persistentFiles: String { dataDirectory + "/files" }
    public var persistentStaging: String { dataDirectory + "/tmp" }
    /// Cache-pool encrypted files.
    public var cacheFiles: String { cacheDirectory + "/files" }
    public var cacheStaging: String { cacheDirectory + "/tmp" }
    /// Downloads handed to their callers rather than kept by the store (a download without caching): the
    /// only files under the store's folders that belong to someone else.
    public var temporaryDownloads: String { cacheDirectory + "/downloads" }
    /// What each process' downloads are fetching now (`TransferBoard`): one small file per process.
    public var transferBoard: String { cacheDirectory + "/transfers" }

    private static func absolute(_ path: String) -> String {
        var p = path
        if !p.hasPrefix("/") { p = FileManager.default.currentDirectoryPath + "/" + p }
        return URL(fileURLWithPath: p).standardizedFileURL.path
    }
}
