import Foundation

/// Decrypts one section of a file sequentially as an `AsyncSequence` whose elements are the plaintext of
/// successive chunks, for streaming a file (upload, export) without holding it in memory. The file is
/// opened when iteration starts; errors (open, tampering) end the iteration with a `CryptoError`.
public struct CryptoFileChunks: AsyncSequence, Sendable {
    public typealias Element = Data
    public typealias Failure = CryptoError

    private let path: String
    private let key: SymmetricKey
    private let section: Int?
    /// What keeps the file on disk (a store's retain token): kept alive by the sequence and its iterators.
    private let owner: (any AnyObject & Sendable)?

    /// Chunks of `section` of the file at `path`; `nil` means the data section of either format.
    public init(path: String, key: SymmetricKey, section: Int? = nil) {
        self.path = path
        self.key = key
        self.section = section
        owner = nil
    }

    /// Chunks of `section` of `file`; the sequence, and each iteration of it, keeps the file's retain token
    /// (and so the file) alive.
    public init(_ file: CryptoFile, section: Int? = nil) {
        path = file.path
        key = file.key
        self.section = section
        owner = file.retainToken
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(path: path, key: key, section: section, owner: owner)
    }

    /// Yields one chunk's plaintext per call to `next()`.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = Data
        public typealias Failure = CryptoError

        private let path: String
        private let key: SymmetricKey
        private let requestedSection: Int?
        private var reader: CryptoFileReader?
        private var chunk: UInt64 = 0
        private var done = false
        private let owner: (any AnyObject & Sendable)?

        init(path: String, key: SymmetricKey, section: Int?, owner: (any AnyObject & Sendable)?) {
            self.path = path
            self.key = key
            requestedSection = section
            self.owner = owner
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(CryptoError) -> Data? {
            try nextChunk()
        }

        public mutating func next() async throws(CryptoError) -> Data? {
            try nextChunk()
        }

        private mutating func nextChunk() throws(CryptoError) -> Data? {
            guard !done else { return nil }
            do throws(CryptoError) {
                let reader = try openedReader()
                let section = requestedSection ?? reader.dataSection
                guard section >= 0 && section < reader.header.format.sectionCount else {
                    throw CryptoError(.outOfRange, "\(path) has no section \(section)")
                }
                guard chunk < reader.header.chunkCount(ofSection: section) else {
                    done = true
                    self.reader = nil
                    return nil
                }
                let chunkSize = UInt64(reader.header.chunkSize)
                let plaintext = try reader.readData(section: section, offset: chunk * chunkSize, count: Int(chunkSize))
                chunk += 1
                return plaintext
            } catch {
                done = true
                reader = nil
                throw error
            }
        }

        private mutating func openedReader() throws(CryptoError) -> CryptoFileReader {
            if let reader { return reader }
            let opened = try CryptoFileReader(path: path, key: key)
            reader = opened
            return opened
        }
    }
}
