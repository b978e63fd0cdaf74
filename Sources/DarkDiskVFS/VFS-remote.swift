
import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskSystem
#if canImport(Glibc)
import Glibc
#endif

/// Reads of nodes that are only in the remote: open starts (or joins) the download into the cache pool; each
/// read waits for the bytes it needs, which the download fetches first, and is answered from another thread
/// as soon as they are written. Once the download lands, the handle switches to the stored file.
extension VFS {
    func openRemote(entry: FSEntry, ino: Inode, outline: OutlineEntry, downloads: DownloadManager) throws(DarkDiskError) -> Opened {
        let key = try manager.keys.unwrap(outline.wrappedKey, for: .node(outline.nodeID))
        let ticket = told(downloads.downloadNodeData(outline.nodeID, options: DownloadOptions(cacheToDiskManager: true)))
        let remote = RemoteData(nodeID: outline.nodeID, key: key, size: outline.dataSize, ticket: ticket)
        return opened(OpenFile(entry: entry, ino: ino, source: .remote(remote)))
    }

    /// `ticket`, whose end tells the remote's health: a transfer that failed for want of the remote (one
    /// request that went `--remote-timeout` without a byte is enough) is an outage, one that landed an answer.
    /// (A read that gave up waiting tells nothing: it may only have waited on a slow server.)
    func told<Value>(_ ticket: DownloadTicket<Value>) -> DownloadTicket<Value> {
        if let health {
            ticket.onCompletion { result in
                switch result {
                case .success: health.noteSuccess()
                case .failure(let error): health.noteFailure(error)
                }
            }
        }
        return ticket
    }

    /// One call into the download layer: "plaintext [offset, offset + size) of this node", answered from the
    /// stored file or the partial download once its chunks are there; then decrypted and answered.
    func readRemote(file: OpenFile, remote: RemoteData, size: Int, offset: UInt64, answer: @escaping ReadAnswer) {
        guard offset < remote.size, size > 0 else {
            answer(.success(UnsafeRawBufferPointer(start: nil, count: 0)))
            return
        }
        guard let downloads else { answer(.failure(Errno(rawValue: EIO))); return }
        let range = offset..<offset + UInt64(size)
        // The remote known to be down: what is here already is served, the rest fails at once.
        let offline = health?.isOffline == true
        let arrived = remote.ticket?.progress.completedBytes
        let ticket = downloads.whenReadable(remote.nodeID, key: remote.key, plaintext: range, ticket: remote.ticket,
                                            timeout: offline ? .zero : remote.waitLimit(remoteTimeout), on: replies, known: remote.partial) { result in
            do {
                switch try result.get() {
                case .stored(let export): self.read(try file.adopt(export), file: file, size: size, offset: offset, answer: answer)
                case .downloading(let partial): self.read(try remote.use(partial), file: file, size: size, offset: offset, answer: answer)
                }
            } catch {
                if (error as? RemoteError)?.code == .unreachable {
                    // Not a byte came for the whole wait: the remote stalls (a stopped server, a link gone
                    // quiet), an outage. (A read that waited on a download that moved, if too slowly, tells
                    // nothing: the server may only be slow; the transfers tell their own failures, `told`.)
                    if !offline, let arrived, remote.ticket?.progress.completedBytes == arrived {
                        self.health?.noteFailure(RemoteError(.unreachable, "no byte of node '\(remote.nodeID)' came for \(self.remoteTimeout)"))
                    }
                    remote.gaveUpWaiting()
                    // One line per outage (the health's), not one per read.
                    if self.health?.isOffline == true {
                        self.logger.debug("\(file.entry.logName): \(error); answering \(Errno(rawValue: VFSErrno.from(error)))")
                        answer(.failure(error))
                        return
                    }
                }
                self.logger.error("\(file.entry.logName): \(error); answering \(Errno(rawValue: VFSErrno.from(error)))")
                answer(.failure(error))
            }
        }
        remote.keep(ticket)
    }
}
