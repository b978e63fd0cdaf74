/// The `-o` options a user may add to a mount; the rest (default_permissions, fsname, subtype) are fixed. The
/// mount is not `ro` (so `setfattr` reaches the daemon), but every write of data answers EROFS.
public enum MountOptions {
    static let allowed: Set<String> = ["allow_other", "allow_root", "auto_unmount", "noatime", "nodev", "nosuid", "noexec", "dirsync", "sync", "async"]

    /// Whether `option` (one `-o` item, `name` or `name=value`) may be passed through.
    public static func isAllowed(_ option: String) -> Bool {
        let name = option.split(separator: "=", maxSplits: 1).first.map(String.init) ?? option
        return allowed.contains(name) || name == "max_read" || name == "fsname" || name == "subtype"
    }

    /// Splits `-o a,b` values into single options, rejecting unknown ones.
    public static func parse(_ values: [String]) throws(UnsupportedOption) -> [String] {
        var result: [String] = []
        for value in values {
            for item in value.split(separator: ",") where !item.isEmpty {
                guard isAllowed(String(item)) else { throw UnsupportedOption(option: String(item)) }
                result.append(String(item))
            }
        }
        return result
    }

    public struct UnsupportedOption: Error, CustomStringConvertible {
        public let option: String
        public var description: String { "unsupported mount option '\(option)' (allowed: \(allowed.sorted().joined(separator: ", ")), max_read=N)" }
    }
}
