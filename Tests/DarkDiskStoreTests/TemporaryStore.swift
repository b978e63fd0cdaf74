import DarkDiskStore
import DarkDiskTestSupport
import Foundation

/// A store in a fresh temporary folder, removed when the test ends.
final class TemporaryStore {
    let directory: String
    let location: StoreLocation

    init() throws {
        directory = NSTemporaryDirectory() + "darkdisk-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        location = StoreLocation(directory: directory + "/store")
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func create(passphrase: String? = nil, clock: any StoreClock = SystemClock()) throws -> DiskManager {
        try DiskManager.create(at: location, passphrase: passphrase.map { Array($0.utf8) }, passphraseCost: .weakest, clock: clock)
    }

    func open(passphrase: String? = nil, clock: any StoreClock = SystemClock()) throws -> DiskManager {
        try DiskManager(location: location, passphrase: passphrase.map { Array($0.utf8) }, clock: clock)
    }

    /// Deterministic pseudo-random bytes.
    static func bytes(_ count: Int, seed: UInt64 = 1) -> Data {
        Data(SplitMix64.bytes(count, seed: seed))
    }
}
