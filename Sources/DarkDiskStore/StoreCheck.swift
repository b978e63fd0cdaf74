/// What `DiskManager.check(full:)` found: whether the index and the files on disk agree. Cache files that
/// vanished are not problems (anyone may purge the cache folder); files no row names are debris a crash
/// can leave, which the start-up sweep removes, and are counted, not problems.
public struct StoreCheck: Sendable, Codable, Equatable {
    /// Index rows checked.
    public var files = 0
    /// Of those, files read to the end with every chunk authenticated (`full`).
    public var authenticated = 0
    /// Cache files in the index but not on disk (the next read treats them as not local).
    public var vanishedCacheFiles = 0
    /// Files on disk that no row names.
    public var orphans = 0
    /// Staging files nobody is writing (left by an interrupted import; the start-up sweep removes them once
    /// untouched for ten minutes), and their bytes.
    public var stagingFiles = 0
    public var stagingBytes: UInt64 = 0
    /// One line per problem: a persistent file missing, a file of the wrong size, a file that does not
    /// authenticate, a pool total that disagrees with the rows.
    public var problems: [String] = []

    public var isHealthy: Bool { problems.isEmpty }

    public init() {}
}
