import ArgumentParser
import DarkDiskStore

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Read or change the store's settings (kept in the index; they survive restarts and a purge of the cache folder).",
        discussion: """
            Keys: pool.<pool>.max_size (bytes; suffixes K, M, G, KiB, MiB, GiB), pool.<pool>.default_expiration \
            (seconds; 0 or less: never), cache.min_free_percent (0 to 90: evict cache files while the cache \
            file system has less free space). <pool> is data, thumbnails or avatars.
            """,
        subcommands: [Get.self, Set.self, List.self])

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print one setting.")
        @OptionGroup var storeOptions: StoreOptions
        @Argument(help: ArgumentHelp("The setting's key.", valueName: "KEY")) var key: String

        func run() throws {
            let key = try ConfigKey(key)
            print(try key.value(in: storeOptions.open()))
        }
    }

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change one setting (and enforce it at once).")
        @OptionGroup var storeOptions: StoreOptions
        @Argument(help: ArgumentHelp("The setting's key.", valueName: "KEY")) var key: String
        // Taken as it comes, so a negative value needs no '--' (`config set pool.data.default_expiration -1`).
        @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The new value.", valueName: "VALUE")) var value: [String] = []

        func validate() throws {
            guard value.count == 1 else {
                throw ValidationError(value.isEmpty ? "Missing expected argument '<VALUE>'" : "one value expected, got \(value.count): \(value.joined(separator: " "))")
            }
        }

        func run() throws {
            let key = try ConfigKey(key)
            try key.set(value[0], in: storeOptions.open())
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print every setting as KEY VALUE.")
        @OptionGroup var storeOptions: StoreOptions

        func run() throws {
            let manager = try storeOptions.open()
            for key in ConfigKey.all { print("\(key.name) \(try key.value(in: manager))") }
        }
    }
}

/// A setting named on the command line.
enum ConfigKey {
    case maxSize(Pool)
    case defaultExpiration(Pool)
    case minFreePercent

    static let all: [ConfigKey] = Pool.allCases.flatMap { [ConfigKey.maxSize($0), .defaultExpiration($0)] } + [.minFreePercent]

    init(_ text: String) throws {
        guard let key = ConfigKey.all.first(where: { $0.name == text }) else {
            throw CLIError("unknown setting '\(text)' (keys: \(ConfigKey.all.map(\.name).joined(separator: ", ")))")
        }
        self = key
    }

    var name: String {
        switch self {
        case .maxSize(let pool): "pool.\(pool.rawValue).max_size"
        case .defaultExpiration(let pool): "pool.\(pool.rawValue).default_expiration"
        case .minFreePercent: "cache.min_free_percent"
        }
    }

    func value(in manager: DiskManager) throws -> String {
        switch self {
        case .maxSize(let pool): "\(try manager.files.settings(for: pool).maxSize)"
        case .defaultExpiration(let pool): "\(Int(try manager.files.settings(for: pool).defaultExpiration))"
        case .minFreePercent: "\(Int((try manager.files.minimumFreeFraction() * 100).rounded()))"
        }
    }

    func set(_ text: String, in manager: DiskManager) throws {
        switch self {
        case .maxSize(let pool):
            guard let bytes = ByteCount.parse(text) else {
                throw CLIError("invalid size '\(text)' for \(name): use bytes, optionally with K, M, G, KiB, MiB or GiB")
            }
            try manager.files.setMaxSize(bytes, for: pool)
        case .defaultExpiration(let pool):
            guard let seconds = Int(text) else { throw CLIError("invalid expiration '\(text)' for \(name): use whole seconds") }
            try manager.files.setDefaultExpiration(Double(seconds), for: pool)
        case .minFreePercent:
            guard let percent = Int(text), (0...90).contains(percent) else {
                throw CLIError("invalid value '\(text)' for \(name): use a whole percentage from 0 to 90")
            }
            try manager.files.setMinimumFreeFraction(Double(percent) / 100)
        }
    }
}

/// Sizes as people type them: `1048576`, `512K`, `25MiB`, `1G` (binary multiples).
enum ByteCount {
    static func parse(_ text: String) -> UInt64? {
        let units: [(String, UInt64)] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10), ("B", 1)]
        for (suffix, multiplier) in units where text.hasSuffix(suffix) {
            guard let number = UInt64(text.dropLast(suffix.count)) else { return nil }
            let (value, overflow) = number.multipliedReportingOverflow(by: multiplier)
            return overflow || value > UInt64(Int64.max) ? nil : value
        }
        guard let value = UInt64(text), value <= UInt64(Int64.max) else { return nil }
        return value
    }
}
