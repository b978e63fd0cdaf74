import DarkDiskStore

/// Files open for writing: one `DriveWriter` per node, its staged content shared by every handle (a read
/// through any of them sees every write at once). A `close` (`commit`) puts what was written into the store;
/// the last handle's `release` commits what is left and lets the content go.
extension Drive {
    /// Makes file `name` in `folder` and opens it for writing (`creat`): made in memory and answered at
    /// once, its row goes into the index with its first commit (`PendingCreates`). Its writer (the caller
    /// `release`s it) and its attributes as made.
    package func createFile(_ name: String, in folder: NodeID?, permissions: UInt32) throws -> (node: DriveNode, writer: DriveWriter, attributes: DriveAttributes) {
        let prepared = try store.prepareDriveFile(named: name, in: folder, attributes: Self.newAttributes(.file, permissions: permissions))
        let node = prepared.node
        let writer = try attachWriter(node.id, record: node) { prepared.content }
        // (The kernel looked the name up first and holds the folder meanwhile; a node another process
        // gave the same name since is shown beside it.)
        creates.add(prepared)
        entriesChanged(in: folder)
        // (Its attributes as made: no query, as its content is the writer's.)
        guard let attributes = try attributes(of: node) else {
            release(writer)
            throw DarkDiskError(.notFound, "drive file (node \(node.id)) went as it was made")
        }
        return (node, writer, attributes)
    }

    /// Opens drive file `id` for writing (emptied when `truncating`): its staged content, made from its
    /// stored data or shared with the handles that write it already. `DataNotLocal` when its data is only in
    /// the remote: the caller downloads it and asks again.
    package func openForWriting(_ id: NodeID, truncating: Bool) throws -> DriveWriter {
        let writer = try attachWriter(id) { try self.content(of: id, truncated: truncating) }
        guard truncating else { return writer }
        do {
            try writer.content.truncate(to: 0)
            // (Truncated to nothing, even from nothing, its times move.)
            writer.content.noteChange()
            // A version of some size given up is replaced by the empty one at once, so that its room is free
            // for what is written next, as a local disk frees a truncated file's blocks (`cp` of 40 MB over
            // 30 MB needs 10 MB free there, not 40).
            if let old = try store.files.storedFile(id, kind: .data), old.storedSize >= Self.truncationFreesAtOnce {
                try commit(writer)
            }
        } catch {
            release(writer)
            throw error
        }
        return writer
    }

    /// The stored size from which an open that truncates a file commits the empty version at once.
    static let truncationFreesAtOnce: UInt64 = 1 << 20

    /// Truncates drive file `id` by name (`truncate`, not through a handle): committed at once.
    package func truncate(_ id: NodeID, to size: UInt64) throws {
        let writer = try attachWriter(id) { try self.content(of: id, truncated: size == 0) }
        defer { release(writer) }
        try writer.content.truncate(to: size)
        try commit(writer)
    }

    /// One handle fewer. The last commits what is left, then the content goes (unless a new handle came).
    package func release(_ writer: DriveWriter) {
        let left = writers.withLock { _ in writer.users.wrappingSubtract(1, ordering: .relaxed).newValue }
        guard left == 0 else { return }
        do { try commit(writer) } catch {
            logger.error("drive file (node \(writer.nodeID)): its last changes could not be committed: \(error)")
        }
        creates.forget(writer.nodeID)
        writers.withLock { table in
            if writer.users.load(ordering: .relaxed) == 0, table[writer.nodeID] === writer { table[writer.nodeID] = nil }
        }
    }

    /// Commits what was written, if anything (`durable`: flushed to the disk); whether there was.
    /// A new file's row goes into the index with its first commit, in one transaction. A `close` returns
    /// once its record is in the journal; handles reading the node change over once the index has it.
    @discardableResult
    package func commit(_ writer: DriveWriter, durable: Bool = false) throws -> Bool {
        let id = writer.nodeID
        let row = try creates.take(id)
        guard writer.content.isDirty else {
            if let row {
                do { try store.insertDriveFile(row, allowingDuplicate: true) } catch {
                    creates.finish(id, putBack: row, failure: nil)
                    throw error
                }
                creates.finish(id, putBack: nil, failure: nil)
            }
            return false
        }
        // (The attributes set before it are in the record now: read it again when asked.)
        defer { writer.forgetRecord() }
        do {
            try store.commitDriveFile(id, content: writer.content, durable: durable, inserting: row) { [weak self] outcome in
                if case .indexed = outcome { self?.versionChanged(id) }
            }
        } catch {
            // (Unless the transaction landed and what failed came after it.)
            if let row {
                let landed = store.hasPendingDriveCommit(id) || (try? store.driveNode(id)) != nil
                creates.finish(id, putBack: landed ? nil : row, failure: nil)
            }
            throw error
        }
        if row != nil { creates.finish(id, putBack: nil, failure: nil) }
        // Reading handles take the new version at their next read (which waits for the index to have it).
        versionChanged(id)
        return true
    }

    /// Commits what was written and flushes the file's stored version, its folder and the index to the disk
    /// (also when a `close` committed it already).
    package func fsync(_ writer: DriveWriter) throws {
        if try !commit(writer, durable: true) {
            try waitForCommits()
            try store.syncNodeData(writer.nodeID)
        }
    }

    /// The staged content of a node for a new handle: shared with the handles that have it already, else
    /// made by `make` (outside the table's lock: it may read the index and open the stored file).
    /// `record`: the node's record, when the caller has just made it.
    func attachWriter(_ id: NodeID, record: DriveNode? = nil, make: () throws -> StagedContent) throws -> DriveWriter {
        while true {
            let (shared, mark) = writers.withLock { table -> (DriveWriter?, UInt64) in
                if let writer = table[id] {
                    writer.users.wrappingAdd(1, ordering: .relaxed)
                    return (writer, 0)
                }
                return (nil, table.makingStarts(id))
            }
            if let shared { return shared }
            let content: StagedContent
            do { content = try make() } catch {
                _ = writers.withLock { $0.makingEnds(id, mark: mark) }
                throw error
            }
            let fresh = DriveWriter(nodeID: id, content: content, record: record)
            let writer = writers.withLock { table -> DriveWriter? in
                let current = table.makingEnds(id, mark: mark)
                // Another open may have made one meanwhile: that one is shared. One that went meanwhile committed a
                // version newer than the one just read: made again.
                guard let writer = table[id] ?? (current ? fresh : nil) else { return nil }
                table[id] = writer
                writer.users.wrappingAdd(1, ordering: .relaxed)
                return writer
            }
            if let writer { return writer }
        }
    }

    /// The staged content a drive file starts with: empty when truncated (a change to commit), else its
    /// stored data. `DataNotLocal` when its data is only in the remote.
    private func content(of id: NodeID, truncated: Bool) throws -> StagedContent {
        // (Its stored version is the index's: a commit of it still in the journal lands first.)
        try settle(id)
        if truncated { return try store.stagedContent(for: id, base: nil, isNew: true) }
        if let export = try store.files.nodeFile(id, kind: .data) { return try store.stagedContent(for: id, base: export) }
        if let outline = try store.outline.entry(id), outline.dataSize > 0 {
            throw DataNotLocal(message: "drive file (node \(id)) is only in the remote, and no remote is set to fetch it from")
        }
        return try store.stagedContent(for: id, base: nil)
    }
}

/// A drive file to be written whose data only the remote has.
package struct DataNotLocal: Error {
    package let message: String
}
