import DarkDiskStore
import DarkDiskCrypto
import DarkDiskSync

extension DownloadManager {
    /// Calls `handler`, as blocking work on `pool`, once plaintext `range` of the node's data can be
    /// decrypted: at once from the stored file, else as soon as the download (joined through `ticket`, or
    /// started into the cache pool) has written the cloud file's header and then the chunks covering `range`,
    /// which it fetches before the rest. `key` is the node's content key. `known`, a reader this caller got
    /// before, spares the header's wait and authentication when the partial file is still the same. Each of
    /// the two waits gives up after `timeout` with `.unreachable`. Returns the download's ticket (nil when
    /// the node is stored), which the caller keeps to join it next time and cancels when done.
    ///
    /// This is the one call a reader of a remote-only node makes (the mount's reads): the mapping of
    /// plaintext to ciphertext chunks and the header's authentication happen here, in the download layer.
    @discardableResult
    public func whenReadable(_ nodeID: NodeID, key: SymmetricKey, plaintext range: Range<UInt64>,
                             ticket: DownloadTicket<NodeDataDownload>? = nil, timeout: Duration? = nil, on pool: BlockingPool,
                             known: PartialReader? = nil,
                             handler: @escaping @Sendable (Result<PlaintextSource, any Error>) -> Void) -> DownloadTicket<NodeDataDownload>? {
        // The ticket of the first wait, for the second one (it is set before any answer can need it, unless the
        // first answer came at once, from a stored file).
        let running = Locked<DownloadTicket<NodeDataDownload>?>(ticket)
        @Sendable @discardableResult func readChunks(_ partial: PartialReader) -> DownloadTicket<NodeDataDownload>? {
            let reader = partial.reader
            let needed = reader.header.ciphertextRange(section: reader.dataSection, offset: range.lowerBound, count: range.count)
            return whenAvailable(nodeID, range: needed, ticket: running.withLock { $0 }, timeout: timeout, on: pool) { result in
                handler(Result { () throws -> PlaintextSource in
                    switch try result.get() {
                    case .stored(let export): return .stored(export)
                    case .downloading(let descriptor):
                        // Still the partial file whose header was read? Else a restarted download's.
                        if descriptor === partial.descriptor { return .downloading(partial) }
                        return .downloading(try Self.partialReader(descriptor, key: key))
                    }
                })
            }
        }
        if let known { return readChunks(known) }
        let started = whenAvailable(nodeID, range: 0..<UInt64(CryptoFormat.headerSize), ticket: ticket, timeout: timeout, on: pool) { result in
            do {
                switch try result.get() {
                case .stored(let export): handler(.success(.stored(export)))
                case .downloading(let descriptor): readChunks(try Self.partialReader(descriptor, key: key))
                }
            } catch {
                handler(.failure(error))
            }
        }
        running.withLock { $0 = started ?? $0 }
        return started
    }

    /// A reader over a partial file whose header has arrived, authenticated with the node's key.
    private static func partialReader(_ descriptor: SharedDescriptor, key: SymmetricKey) throws -> PartialReader {
        PartialReader(reader: try CryptoFileReader(fileDescriptor: descriptor.fileDescriptor, key: key, owner: descriptor),
                      descriptor: descriptor)
    }
}
