import DarkDiskStore
import DarkDiskCrypto
import Foundation

extension DownloadManager {
    /// Downloads the small parts of a node without its data: the header by one range request, then each
    /// asked-for section by another. Parts already local (the section's own file, or the node's whole cloud
    /// file) are read from the store instead. With `options.cacheToDiskManager` (the default) the sections
    /// fetched enter the cache pool as the node's metadata and thumbnail files. `options.policy` `.remote`
    /// reads every part from the remote and replaces the stored sections; `.storedOnly` downloads nothing
    /// and fails with `notLocal` if a part is neither stored nor known (from the outline) to be absent.
    public func downloadNodeMeta(_ nodeID: NodeID, components: NodeMetaComponents = .all,
                                 options: DownloadOptions = .nodeMeta) -> DownloadTicket<NodeMetaDownload> {
        let policy = options.policy
        return transfers.ticket(.nodeMeta(nodeID, components, policy), options: options) { transfer in
            try await self.transferNodeMeta(nodeID, components, policy: policy, transfer)
        }
    }

    private func transferNodeMeta(_ nodeID: NodeID, _ components: NodeMetaComponents, policy: FetchPolicy,
                                  _ transfer: Transfer<NodeMetaDownload>) async throws -> NodeMetaDownload {
        var wanted: [CloudFileSection] = []
        if components.contains(.metadata) { wanted.append(.metadata) }
        if components.contains(.thumbnail) { wanted.append(.thumbnail) }
        let needsHeader = components.contains(.header)
        let manager = self.manager
        if policy == .remote {
            return try await fetchMeta(nodeID, sections: wanted, into: NodeMetaDownload(), header: needsHeader, transfer: transfer, attempts: 3)
        }
        // What the store has already (blocking: index reads, decryption, imports).
        let local = try await blocking { [wanted] () throws -> (NodeMetaDownload, [CloudFileSection], complete: Bool) in
            var result = NodeMetaDownload()
            var wanted = wanted
            if policy == .storedOnly, let outline = try manager.outline.entry(nodeID) {
                // Known from the outline to be absent: nothing to download for them.
                wanted.removeAll { ($0 == .metadata ? outline.metadataSize : outline.thumbnailSize) == 0 }
            }
            for section in wanted {
                if let local = try manager.files.nodeFile(nodeID, kind: section.fileKind) {
                    result[section] = try Self.plaintext(of: local)
                    wanted.removeAll { $0 == section }
                }
            }
            guard !wanted.isEmpty || needsHeader, let local = try manager.files.nodeFile(nodeID, kind: .data),
                  local.isRemoteVersion(of: try manager.outline.entry(nodeID)) else {
                return (result, wanted, false)
            }
            // The whole cloud file is here: every section and the header come from it.
            let reader = try local.reader()
            if needsHeader { result.header = reader.header }
            // Cached like sections fetched from the remote, so that a reader of the store (the mount opens
            // `/nodes/<id>/metadata` after this download) finds them stored.
            let caching = transfer.decideCaching()
            for section in wanted {
                let size = reader.plaintextSize(ofSection: section.rawValue)
                guard size > 0 else { continue }
                let plaintext = Data(try reader.read(section: section.rawValue, offset: 0, count: Int(size)))
                result[section] = plaintext
                if caching { try Self.cache(plaintext, nodeID: nodeID, kind: section.fileKind, in: manager) }
            }
            return withExtendedLifetime(local) { (result, [], true) }
        }
        let result = local.0
        wanted = local.1
        if local.complete { return result }
        guard !wanted.isEmpty || needsHeader else { return result }
        if policy == .storedOnly {
            let parts = wanted.map { $0 == .metadata ? "metadata" : "thumbnail" } + (needsHeader ? ["header"] : [])
            throw RemoteError(.notLocal, "the \(parts.joined(separator: " and ")) of node '\(nodeID)' is not stored locally (and this request may not download)")
        }
        return try await fetchMeta(nodeID, sections: wanted, into: result, header: needsHeader, transfer: transfer, attempts: 3)
    }

    /// `fetchOnce`, again (up to `attempts` in all) when the node was replaced between the header and a section.
    private func fetchMeta(_ nodeID: NodeID, sections wanted: [CloudFileSection], into partial: NodeMetaDownload, header needsHeader: Bool,
                           transfer: Transfer<NodeMetaDownload>, attempts: Int) async throws -> NodeMetaDownload {
        for attempt in 0..<attempts {
            do {
                return try await fetchOnce(nodeID, sections: wanted, into: partial, header: needsHeader, transfer: transfer)
            } catch let error as RemoteError where error.code == .changed && attempt < attempts - 1 {
                continue  // Replaced between the header and a section: read both again.
            }
        }
        throw RemoteError(.changed, "node '\(nodeID)' keeps changing in the cloud while its meta downloads")
    }

    private func fetchOnce(_ nodeID: NodeID, sections wanted: [CloudFileSection], into partial: NodeMetaDownload, header needsHeader: Bool,
                           transfer: Transfer<NodeMetaDownload>) async throws -> NodeMetaDownload {
        let manager = self.manager
        let (entry, key) = try await blocking { () throws -> (OutlineEntry, SymmetricKey) in
            guard let entry = try manager.outline.entry(nodeID) else {
                throw RemoteError(.unknownNode, "node '\(nodeID)' is not stored locally and the remote's outline does not have it")
            }
            return (entry, try manager.keys.unwrap(entry.wrappedKey, for: .node(entry.nodeID)))
        }
        let objectKey = CloudLayout.cloudFile(of: entry, with: manager)
        guard let info = try await remote.info(objectKey) else {
            throw RemoteError(.notFound, "node '\(nodeID)' is in the outline but its cloud file is not in \(remote.url)")
        }
        let started = Date()
        let headerRange: Range<UInt64> = 0..<UInt64(CryptoFormat.headerSize)
        let headerBytes = try await remote.read(objectKey, range: headerRange, ifMatch: info.etag)
        let header = try CryptoFileHeader(authenticating: Array(headerBytes), key: key, name: objectKey)
        guard header.format == .cloudFile, CloudFilePadding.accepts(objectSize: info.size, fileLength: header.fileLength) else {
            throw RemoteError(.invalidResponse, "\(objectKey) is not the cloud file its header describes (\(info.size) bytes, header says \(header.fileLength))")
        }
        try entry.checkAgreement(with: header, objectKey: objectKey)
        let present = wanted.filter { header.sectionSizes[$0.rawValue] > 0 }
        let total = UInt64(headerBytes.count) + present.reduce(0) { $0 + header.ciphertextLength(ofSection: $1.rawValue) }
        var received = UInt64(headerBytes.count)
        func report() {
            let elapsed = max(Date().timeIntervalSince(started), 0.001)
            transfer.report(DownloadProgress(completedBytes: received, totalBytes: total, resumedBytes: 0, throughput: Double(received) / elapsed))
        }
        report()
        var ciphertexts: [Int: Data] = [:]
        for section in present {
            let start = header.sectionOffset(section.rawValue)
            let range = start..<start + header.ciphertextLength(ofSection: section.rawValue)
            ciphertexts[section.rawValue] = try await remote.read(objectKey, range: range, ifMatch: info.etag)
            received += UInt64(range.count)
            report()
        }
        let scratch = try cacheFolder("partial")
        return try await blocking { [ciphertexts] () throws -> NodeMetaDownload in
            let file = try RangedCloudFile(headerBytes: Array(headerBytes), sections: ciphertexts, key: key,
                                           scratchFolder: scratch, name: objectKey)
            var result = partial
            if needsHeader { result.header = header }
            let caching = transfer.decideCaching()
            for section in present {
                let plaintext = try file.plaintext(section)
                result[section] = plaintext
                if caching { try Self.cache(plaintext, nodeID: nodeID, kind: section.fileKind, in: manager) }
            }
            return result
        }
    }

    /// Keeps a fetched section in the cache pool, unless it is larger than the whole pool (then the caller
    /// has it in memory and the store keeps nothing).
    /// A section stored persistently (a refresh replaces it) stays persistent.
    static func cache(_ plaintext: Data, nodeID: NodeID, kind: FileKind, in manager: DiskManager) throws {
        do throws(DarkDiskError) {
            var importing = DiskImport(cleartextData: plaintext)
            importing.storePersistently = try manager.files.storedFile(nodeID, kind: kind)?.mode == .persistent
            try manager.importNodeFile(importing, nodeID: nodeID, kind: kind)
        } catch {
            guard error.code == .tooLarge else { throw error }
        }
    }

    /// The whole plaintext of a stored file's content section.
    static func plaintext(of export: DiskExport) throws -> Data {
        let reader = try export.reader()
        return Data(try reader.read(section: reader.dataSection, offset: 0, count: Int(reader.plaintextSize(ofSection: reader.dataSection))))
    }
}

extension CloudFileSection {
    /// The store's file kind for a node's section.
    var fileKind: FileKind {
        switch self {
        case .metadata: .metadata
        case .thumbnail: .thumbnail
        case .data: .data
        }
    }
}

extension NodeMetaDownload {
    subscript(section: CloudFileSection) -> Data? {
        get { section == .metadata ? metadata : section == .thumbnail ? thumbnail : nil }
        set {
            if section == .metadata { metadata = newValue } else if section == .thumbnail { thumbnail = newValue }
        }
    }
}
