import Foundation

/// Reading and rewriting whole files as byte arrays, for building and tampering with test files.
enum FileBytes {
    static func read(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// Applies `change` to the bytes of the file at `path`.
    static func modify(_ path: String, _ change: (inout [UInt8]) -> Void) throws {
        var bytes = try read(path)
        change(&bytes)
        try write(bytes, to: path)
    }
}
