/// The `-o` options a user may add to a mount; the rest (fsname, subtype, and default_permissions when
/// `admitsOthers`) are fixed. The
/// mount is not `ro` (so `setfattr` reaches the daemon), but every write of data answers EROFS.
package enum MountOptions {
    static let allowed: Set<String> = ["allow_other", "allow_root", "auto_unmount", "noatime", "nodev", "nosuid", "noexec", "dirsync", "sync", "async"]

    /// Whether `option` (one `-o` item, `name` or `name=value`) may be passed through.
    package static func isAllowed(_ option: String) -> Bool {
        let name = option.split(separator: "=", maxSplits: 1).first.map(String.init) ?? option
        if name == "max_read" { return maxRead(option) != nil }
        return allowed.contains(name)
    }

    /// Whether `options` let users other than the mounting one in (`allow_other`, `allow_root`): the kernel
    /// then checks permissions (`default_permissions`), with groups and capabilities. Otherwise every caller
    /// is the owner, and the daemon checks the owner's bits itself (`AccessCheck`): the kernel's checks
    /// would ask a `GETATTR` of a folder before each walk through it after it changed, one per file `tar x` makes.
    static func admitsOthers(_ options: [String]) -> Bool {
        options.contains("allow_other") || options.contains("allow_root")
    }

    /// The byte count of a `max_read=N` option (N from 1 to 2³²−1), nil for anything else.
    static func maxRead(_ option: String) -> UInt32? {
        guard option.hasPrefix("max_read="), let value = UInt32(option.dropFirst("max_read=".count)), value > 0 else { return nil }
        return value
    }

    /// The last `max_read=N` among `options`: libfuse insists that the file system's `init` asks for the
    /// same size as the mount option (it ends the session otherwise).
    static func maxRead(in options: [String]) -> UInt32? {
        options.compactMap(maxRead).last
    }

    /// Splits `-o a,b` values into single options, rejecting unknown ones.
    package static func parse(_ values: [String]) throws(UnsupportedOption) -> [String] {
        var result: [String] = []
        for value in values {
            for item in value.split(separator: ",") where !item.isEmpty {
                guard isAllowed(String(item)) else { throw UnsupportedOption(option: String(item)) }
                result.append(String(item))
            }
        }
        try checkCombination(result)
        return result
    }

    /// Refuses options that exclude each other (libfuse refuses the mount then, with a line in the log).
    static func checkCombination(_ options: [String]) throws(UnsupportedOption) {
        if options.contains("allow_other") && options.contains("allow_root") {
            throw UnsupportedOption(option: "allow_other,allow_root")
        }
    }

    package struct UnsupportedOption: Error, CustomStringConvertible {
        package let option: String
        package var description: String {
            if option.hasPrefix("max_read") { return "mount option '\(option)' needs a number of bytes, e.g. max_read=131072" }
            if option == "allow_other,allow_root" {
                return "mount options allow_other and allow_root exclude each other (allow_other lets every user in, allow_root only you and root)"
            }
            return "unsupported mount option '\(option)' (allowed: \(allowed.sorted().joined(separator: ", ")), max_read=N)"
        }
    }
}
