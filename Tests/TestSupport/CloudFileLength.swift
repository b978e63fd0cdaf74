import Foundation

/// The length of the cloud file a bucket object holds, without its padding: what a download moves. Worked
/// out from the object's first 80 bytes as Docs/FORMAT.md spells the header (little-endian chunk size at 8,
/// section sizes at 32, 40 and 48; each section is its plaintext and a 16-byte tag per chunk), not by the
/// library under test.
public enum CloudFileLength {
    public static func of(header: [UInt8]) -> Int {
        precondition(header.count >= 80, "a header is 80 bytes")
        func number(_ at: Int, _ count: Int) -> Int { (0..<count).reduce(0) { $0 | Int(header[at + $1]) << (8 * $1) } }
        let chunk = number(8, 4)
        return 80 + [32, 40, 48].map { number($0, 8) }.reduce(0) { $0 + $1 + 16 * (($1 + chunk - 1) / chunk) }
    }

    /// The cloud file length of the object at `path`.
    public static func ofObject(at path: String) throws -> Int {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw CocoaError(.fileReadNoSuchFile) }
        defer { try? handle.close() }
        return of(header: Array(try handle.read(upToCount: 80) ?? Data()))
    }
}
