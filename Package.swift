// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "darkdisk",
    products: [
        .library(name: "DarkDiskCrypto", targets: ["DarkDiskCrypto"]),
        .library(name: "DarkDiskStore", targets: ["DarkDiskStore"]),
        .library(name: "DarkDiskCloud", targets: ["DarkDiskCloud"]),
        .library(name: "DarkDiskRemote", targets: ["DarkDiskRemote"]),
        .library(name: "DarkDiskImages", targets: ["DarkDiskImages"]),
        .executable(name: "darkdisk", targets: ["darkdisk"]),
        .library(name: "DarkDiskCache", targets: ["DarkDiskCache"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        .systemLibrary(name: "CFuse3", pkgConfig: "fuse3", providers: [.apt(["libfuse3-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // libvips, loaded with dlopen on first use (see Sources/CVips/include/CVips.h for why it is not linked).
        .target(name: "CVips", linkerSettings: [.linkedLibrary("dl")]),
        // The lock every module shares values behind (visible to ThreadSanitizer, unlike Synchronization.Mutex).
        .target(name: "DarkDiskSync"),
        // The one syscall and errno layer (swift-system's shape): Errno, EINTR-retrying calls, full-length
        // pread/pwrite, a throwing flock, the descriptor owner (OwnedDescriptor), and the error protocol every
        // module's error types conform to.
        // Linux calls Swift cannot make directly (variadic prctl).
        .target(name: "CLinux"),
        // An SQLite VFS that encrypts the index of a store with a passphrase at rest (AES-256-XTS through
        // OpenSSL), passing every other database through.
        .target(name: "CIndexCipher", dependencies: ["COpenSSL"],
                linkerSettings: [.linkedLibrary("sqlite3"), .linkedLibrary("crypto")]),
        .target(name: "DarkDiskSystem", dependencies: ["CLinux"]),
        .target(name: "DarkDiskCrypto", dependencies: ["COpenSSL", "DarkDiskSync", "DarkDiskSystem"]),
        .target(name: "DarkDiskStore", dependencies: ["DarkDiskSync", "DarkDiskSystem",
            "DarkDiskCrypto", "CIndexCipher",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "GRDBSQLite", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The remote clients (HTTP, S3 with its signing and XML, file://): no dependency on the store.
        .target(name: "DarkDiskRemote", dependencies: ["DarkDiskSync", "DarkDiskSystem", "DarkDiskCrypto",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
        ]),
        .target(name: "DarkDiskCloud", dependencies: ["DarkDiskSync", "DarkDiskSystem", "DarkDiskRemote",
            "DarkDiskStore", "DarkDiskCrypto",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The writable drive: lookups, listings and changes of `/files` with read-your-writes, FUSE-free.
        .target(name: "DarkDiskDrive", dependencies: ["DarkDiskSync", "DarkDiskSystem", "DarkDiskStore",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The file system the mount serves, without FUSE: inodes, handles, typed operations (rclone's vfs/).
        .target(name: "DarkDiskVFS", dependencies: ["DarkDiskSync", "DarkDiskSystem",
            "DarkDiskStore", "DarkDiskDrive", "DarkDiskCrypto", "DarkDiskCloud",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The thin FUSE adapter over the VFS: libfuse's operation table, replies, /dev/fuse I/O, notices.
        .target(name: "DarkDiskFS", dependencies: ["DarkDiskSync", "DarkDiskSystem", "DarkDiskVFS",
            "DarkDiskStore", "DarkDiskDrive", "DarkDiskCrypto", "DarkDiskCloud", "CFuse3",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "darkdisk", dependencies: ["DarkDiskSync", "DarkDiskSystem",
            "DarkDiskStore", "DarkDiskFS", "DarkDiskCloud",
            "DarkDiskImages",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Measurements for Scripts/bench that need the library in-process (100,000-file stores).
        .executableTarget(name: "darkdisk-bench", dependencies: ["DarkDiskStore", "DarkDiskCloud", "DarkDiskSync"]),
        // Fuzzing: the targets, and one executable that libFuzzer drives when Scripts/fuzz builds it
        // with --sanitize=fuzzer -DFUZZING, and that otherwise replays inputs or writes the seed corpus.
        .target(name: "DarkDiskFuzzTargets", dependencies: ["DarkDiskSystem", "DarkDiskCrypto", "DarkDiskStore", "DarkDiskCloud", "DarkDiskRemote", "DarkDiskVFS"]),
        .executableTarget(name: "darkdisk-fuzz", dependencies: ["DarkDiskFuzzTargets"]),
        // The general key/value disk cache; independent of the store.
        .target(name: "DarkDiskCache", dependencies: ["DarkDiskSync", "DarkDiskSystem",
            "DarkDiskCrypto",
            .product(name: "GRDBSQLite", package: "GRDB.swift"),
        ]),
        // A second process for DarkDiskCacheTests (concurrent writers, kill -9 mid-set) and Scripts/bench diskcache.
        // It writes the tests' self-checking values (DarkDiskTestSupport's CacheValuePattern).
        .executableTarget(name: "darkdisk-cache-tool", dependencies: ["DarkDiskCache", "DarkDiskTestSupport"]),
        .testTarget(name: "DarkDiskSyncTests", dependencies: ["DarkDiskSync", "DarkDiskSystem", "DarkDiskTestSupport"]),
        .testTarget(name: "DarkDiskCacheTests", dependencies: ["DarkDiskTestTraits", "DarkDiskSync", "DarkDiskCache", "DarkDiskTestSupport"]),
        .testTarget(name: "DarkDiskCryptoTests", dependencies: ["DarkDiskCrypto", "DarkDiskTestSupport"],
                    resources: [.copy("Fixtures")]),
        .testTarget(name: "DarkDiskStoreTests", dependencies: ["DarkDiskTestTraits", "DarkDiskStore", "DarkDiskCrypto", "DarkDiskSync", "DarkDiskTestSupport",
                                                   .product(name: "GRDB", package: "GRDB.swift"),
                                                   .product(name: "Logging", package: "swift-log")]),
        // Real servers for the tests (nginx, our fault-injecting proxy), shared by the test targets.
        .target(name: "DarkDiskTestSupport", dependencies: ["DarkDiskSync", "DarkDiskSystem", .product(name: "Logging", package: "swift-log")],
                path: "Tests/TestSupport"),
        // Which threads tests run on, and how many that run programs at once (OwnThreads, ProcessSlots).
        .target(name: "DarkDiskTestTraits", path: "Tests/TestTraits"),
        .testTarget(name: "DarkDiskCloudTests", dependencies: ["DarkDiskTestTraits", "DarkDiskSync", "DarkDiskCloud", "DarkDiskRemote", "DarkDiskStore", "DarkDiskCrypto", "DarkDiskTestSupport",
                                                        .product(name: "GRDB", package: "GRDB.swift"),
                                                   .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "DarkDiskFuzzTests", dependencies: ["DarkDiskFuzzTargets", "DarkDiskTestSupport"]),
        .testTarget(name: "DarkDiskCLITests", dependencies: ["DarkDiskTestTraits", "DarkDiskStore", "DarkDiskCloud", "DarkDiskCrypto", "DarkDiskFS", "DarkDiskSync", "DarkDiskTestSupport"]),
        // The VFS in process, without a mount (operations, inode table, errno mapping, attribute values), and
        // the FUSE adapter's mount options.
        .testTarget(name: "DarkDiskVFSTests", dependencies: ["DarkDiskTestTraits", "DarkDiskStore", "DarkDiskCache", "DarkDiskCloud", "DarkDiskCrypto", "DarkDiskVFS", "DarkDiskFS", "DarkDiskDrive", "DarkDiskSystem", "DarkDiskTestSupport"]),
        // The drive in process, without a mount: read-your-writes of every change, pending creates.
        .testTarget(name: "DarkDiskDriveTests", dependencies: ["DarkDiskTestTraits", "DarkDiskStore", "DarkDiskDrive", "DarkDiskSync", "DarkDiskTestSupport",
                                                        .product(name: "Logging", package: "swift-log")]),
        // The image manager: in-memory caches of processed thumbnails and avatars, libvips underneath.
        .target(name: "DarkDiskImages", dependencies: ["DarkDiskSync", "DarkDiskSystem", "DarkDiskStore", "DarkDiskCloud", "DarkDiskCrypto", "CVips"],
                resources: [.copy("Resources")]),
        .testTarget(name: "DarkDiskImagesTests", dependencies: ["DarkDiskSync", "DarkDiskImages", "DarkDiskStore", "DarkDiskCloud", "DarkDiskCrypto", "CVips", "DarkDiskTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

// `Scripts/bench images` times DarkDiskImages in-process too (memory-cache hits, thumbnails per second).
package.targets.first { $0.name == "darkdisk-bench" }!.dependencies.append("DarkDiskImages")

// A module's README.md (its detail, next to its code) is documentation, not a source of the target.
for target in package.targets where ["DarkDiskSystem", "DarkDiskSync", "DarkDiskStore", "DarkDiskDrive", "DarkDiskCloud",
                                     "DarkDiskVFS", "DarkDiskImages", "DarkDiskCache", "darkdisk"].contains(target.name) {
    target.exclude.append("README.md")
}
