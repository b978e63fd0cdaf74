import CFuse3
import DarkDisk
import DarkDiskCloud
import DarkDiskCrypto
#if canImport(Glibc)
import Glibc
#endif

/// Reads of nodes that are only in the remote: open starts (or joins) the download into the cache pool; each
/// read waits for the bytes it needs, which the download fetches first, and is answered from another thread
/// as soon as they are written. Once the download lands, the handle switches to the stored file.
extension FuseFileSystem {
    func openRemote(_ reply: FuseReply, entry: FSEntry, ino: fuse_ino_t, outline: OutlineEntry, downloads: DownloadManager,
                    fi: UnsafeMutablePointer<fuse_file_info>) throws(DarkDiskError) {
        let key = try manager.unwrapKey(outline.wrappedKey)
        let ticket = downloads.downloadNodeData(outline.nodeID, options: DownloadOptions(cacheToDiskManager: true))
        let remote = RemoteData(nodeID: outline.nodeID, key: key, size: outline.dataSize, ticket: ticket)
        answer(reply, open: OpenFile(entry: entry, ino: ino, source: .remote(remote)), fi: fi)
    }

    func readRemote(_ reply: FuseReply, file: OpenFile, remote: RemoteData, size: Int, offset: UInt64) {
        guard offset < remote.size, size > 0 else {
            reply.buffer(nil, 0)
            return
        }
        let pending = PendingRequest(reply: reply)
        if let reader = remote.reader {
            wait(pending, file: file, remote: remote, reader: reader, size: size, offset: offset)
            return
        }
        // The cloud file's header first: it maps plaintext offsets to the ciphertext a read needs.
        waitForBytes(pending, file: file, remote: remote, range: 0..<UInt64(CryptoFormat.headerSize)) { readable in
            switch readable {
            case .stored(let reader):
                self.answer(pending.reply, read: reader, file: file, size: size, offset: offset)
            case .partial(let descriptor):
                self.wait(pending, file: file, remote: remote, reader: try remote.reader(over: descriptor), size: size, offset: offset)
            }
        }
    }

    /// Waits for the chunks covering [offset, offset + size), then decrypts and replies.
    private func wait(_ pending: PendingRequest, file: OpenFile, remote: RemoteData, reader: CryptoFileReader, size: Int, offset: UInt64) {
        let needed = reader.header.ciphertextRange(section: reader.dataSection, offset: offset, count: size)
        waitForBytes(pending, file: file, remote: remote, range: needed) { readable in
            switch readable {
            case .stored(let stored): self.answer(pending.reply, read: stored, file: file, size: size, offset: offset)
            case .partial(let descriptor): self.answer(pending.reply, read: try remote.reader(over: descriptor), file: file, size: size, offset: offset)
            }
        }
    }

    /// Where the bytes a read waited for are: the download's partial file, or the stored file it became.
    private enum Readable {
        case partial(SharedDescriptor)
        case stored(CryptoFileReader)
    }

    /// Calls `then` once `range` of the cloud file can be read: from the partial file, or from the stored
    /// file if the download landed (the handle then holds the stored file's retain token). Failures (the
    /// remote unreachable past the timeout, a damaged download) answer the read with an error.
    private func waitForBytes(_ pending: PendingRequest, file: OpenFile, remote: RemoteData, range: Range<UInt64>,
                              then: @escaping @Sendable (Readable) throws -> Void) {
        guard let downloads else { pending.reply.error(EIO); return }
        let ticket = downloads.whenAvailable(remote.nodeID, range: range, ticket: remote.ticket, timeout: remote.waitLimit(remoteTimeout),
                                             on: replies) { result in
            do {
                switch try result.get() {
                case .downloading(let descriptor): try then(.partial(descriptor))
                case .stored(let export): try then(.stored(try file.adopt(export)))
                }
            } catch {
                if (error as? RemoteError)?.code == .unreachable { remote.gaveUpWaiting() }
                self.logger.error("\(file.entry.logName): \(error); answering \(FuseErrno.from(error))")
                pending.reply.error(FuseErrno.from(error))
            }
        }
        remote.keep(ticket)
    }
}
