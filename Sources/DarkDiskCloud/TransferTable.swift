import DarkDiskSync

/// The transfers in flight, by request: an identical request joins the running transfer instead of
/// starting another (ZeroDark.cloud's request coalescing). Node data transfers are coalesced by their
/// `RemoteNode` and only listed here, for `transfersInFlight`.
final class TransferTable: Sendable {
    private let transfers = Locked<[TransferKey: any ListedTransfer]>([:])

    /// A ticket for `key`: joins the running transfer, or starts `body` as a new one.
    func ticket<Value: Sendable>(_ key: TransferKey, options: DownloadOptions,
                                 body: @escaping @Sendable (Transfer<Value>) async throws -> Value) -> DownloadTicket<Value> {
        let ticket = DownloadTicket<Value>(options: options)
        let started = transfers.withLock { table -> Transfer<Value>? in
            if let running = table[key] as? Transfer<Value>, running.attach(ticket) { return nil }
            let transfer = Transfer<Value>(onClose: { [weak self] closed in self?.remove(key, closed) })
            _ = transfer.attach(ticket)
            table[key] = transfer
            return transfer
        }
        if let started { started.start { try await body(started) } }
        return ticket
    }

    /// Lists a transfer another owner runs (a `RemoteNode`'s), until `unlist`.
    func list(_ key: TransferKey, _ transfer: any ListedTransfer) {
        transfers.withLock { $0[key] = transfer }
    }

    /// Forgets a transfer `list` listed, if it is still the one listed for `key`.
    func unlist(_ key: TransferKey, _ transfer: AnyObject) {
        remove(key, transfer)
    }

    /// Number of transfers running (for tests and status).
    var count: Int { transfers.withLock { $0.count } }

    /// The transfers running, oldest first.
    var statuses: [TransferStatus] {
        let running = transfers.withLock { Array($0) }
        return running.map { key, transfer in
            let listing = transfer.listing
            return TransferStatus(key: key, progress: listing.progress, started: listing.started, requests: listing.requests)
        }.sorted { ($0.started, $0.subject) < ($1.started, $1.subject) }
    }

    /// Forgets `transfer` if it is still the one registered for `key` (a newer one may have replaced it).
    private func remove(_ key: TransferKey, _ transfer: AnyObject) {
        transfers.withLock { table in
            if table[key] === transfer { table[key] = nil }
        }
    }
}
