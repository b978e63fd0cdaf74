import Foundation

/// The `darkdisk` binary under test: `DARKDISK_BIN` (set by Scripts/test), else the debug build next to the sources.
public enum DarkDiskBinary {
    public static let path: String = {
        if let path = ProcessInfo.processInfo.environment["DARKDISK_BIN"], !path.isEmpty { return path }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/darkdisk").path
    }()
}
