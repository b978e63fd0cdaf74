import DarkDisk
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

    func create(passphrase: String? = nil) throws -> DiskManager {
        try DiskManager.create(at: location, passphrase: passphrase.map { Array($0.utf8) })
    }

    func open(passphrase: String? = nil) throws -> DiskManager {
        try DiskManager(location: location, passphrase: passphrase.map { Array($0.utf8) })
    }

    /// Deterministic pseudo-random bytes.
    static func bytes(_ count: Int, seed: UInt64 = 1) -> Data {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var data = Data(count: count)
        data.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) in
            for i in 0..<count {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17
                buffer[i] = UInt8(truncatingIfNeeded: state)
            }
        }
        return data
    }
}
