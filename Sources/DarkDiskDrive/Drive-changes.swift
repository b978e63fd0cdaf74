import DarkDiskStore
#if canImport(Glibc)
import Glibc
#endif

/// Changing the drive's outline: making folders, links and empty files, removing and moving entries, and
/// their attributes. Each is an edit of the index (`DiskManager.createDriveNode` and friends), queued for
/// upload by the store; none copies data.
extension Drive {
    /// Makes folder `name` in `folder` (nil: the top). The rows of files made before it are in first; the
    /// journal's commits are waited for only when one makes the same name (`DiskManager.createDriveNode`):
    /// waiting for all of them made each `mkdir` of a `tar x` wait for the index's next batch.
    package func makeFolder(_ name: String, in folder: NodeID?, permissions: UInt32) throws(DarkDiskError) -> DriveNode {
        creates.drain()
        let node = try store.createDriveNode(named: name, in: folder, attributes: Self.newAttributes(.folder, permissions: permissions))
        entriesChanged(in: folder)
        return node
    }

    /// Makes link `name` to `target` in `folder` (as `makeFolder` does).
    package func makeLink(_ name: String, to target: String, in folder: NodeID?) throws(DarkDiskError) -> DriveNode {
        creates.drain()
        var attributes = Self.newAttributes(.symlink, permissions: 0o777)
        attributes.target = target
        let node = try store.createDriveNode(named: name, in: folder, attributes: attributes)
        entriesChanged(in: folder)
        return node
    }

    /// Makes empty file `name` in `folder` without opening it (`mknod`): committed at once.
    package func makeFile(_ name: String, in folder: NodeID?, permissions: UInt32) throws(DarkDiskError) -> DriveNode {
        _ = try currentStore()
        let (node, content) = try store.createDriveFile(named: name, in: folder, attributes: Self.newAttributes(.file, permissions: permissions))
        try store.commitDriveFile(node.id, content: content)
        entriesChanged(in: folder)
        return node
    }

    /// Removes entry `name` from `folder`: a file or a link (`unlink`), or an empty folder (`rmdir`, when
    /// `isFolder`); the kind not asked for is `EISDIR` or `ENOTDIR`. Its node. A file or link goes through the
    /// store's journal (`DiskManager.journalDriveRemoval`): the `unlink` returns once its record is written,
    /// and a lookup of the name waits for the index to take it. (One transaction per `unlink` made `rm -rf`
    /// four times slower than gocryptfs.) A folder goes at once, after everything journaled before it.
    @discardableResult
    package func remove(_ name: String, in folder: NodeID?, isFolder: Bool) throws(DarkDiskError) -> NodeID {
        guard let node = try child(named: name, in: folder) else { throw DarkDiskError(.notFound, "no entry '\(name)'") }
        switch (node.attributes.kind == .folder, isFolder) {
        case (true, false): throw DarkDiskError(.isDirectory, "'\(name)' is a folder")
        case (false, true): throw DarkDiskError(.notDirectory, "'\(name)' is not a folder")
        default: break
        }
        // (A name shown with a suffix, `DriveNames`, is not the one the journal would note: such a node goes at once.)
        let journaled = !isFolder && DriveNames.same(node.name, name) ? try store.journalDriveRemoval(node) : false
        if !journaled { try store.deleteDriveNode(node.id) }
        forgetRecords([node.id])
        entriesChanged(in: folder)
        return node.id
    }

    /// Moves `node` to `name` in `folder` (a folder moves with everything in it); over an entry of that
    /// name unless `replacing` is false (`EEXIST`). The node it replaced, if any.
    @discardableResult
    package func move(_ node: DriveNode, to name: String, in folder: NodeID?, replacing: Bool) throws(DarkDiskError) -> NodeID? {
        // (After the journal's records of this node, and of the name it takes: not the whole journal, which a
        // `git` or `dbench` that renames between its closes waited for at every rename.)
        creates.drain()
        if !store.driveCommitsIdle, store.hasPendingDriveCommit(node.id) || store.hasPendingDriveCommit(named: name, in: folder) {
            try waitForCommits()
        }
        let replaced = try store.moveDriveNode(node.id, to: name, in: folder, replacing: replacing)
        forgetRecords([node.id] + (replaced.map { [$0] } ?? []))
        entriesChanged(in: node.parentID, folder)
        return replaced
    }

    /// Swaps the places of nodes `a` and `b` (`RENAME_EXCHANGE`): each takes the other's name and folder, in
    /// one change.
    package func exchange(_ a: DriveNode, _ b: DriveNode) throws(DarkDiskError) {
        _ = try currentStore()
        try store.exchangeDriveNodes(a.id, b.id)
        forgetRecords([a.id, b.id])
        entriesChanged(in: a.parentID, b.parentID)
    }

    /// Sets node `id`'s permission bits and modification time (either may be nil). A file being written here
    /// takes them with its next commit (one transaction at close); else the record changes now.
    package func setAttributes(of id: NodeID, permissions: UInt32?, modified: DriveTime?) throws(DarkDiskError) {
        try settle(id)
        if let writer = writer(of: id),
           writer.content.deferAttributes(mode: permissions, modified: modified.map { ($0.seconds, $0.nanoseconds) }) {
            return
        }
        creates.drain()
        let written = try store.updateDriveAttributes(id) { (node) throws(DarkDiskError) in
            if let permissions { node.mode = permissions & 0o7777 }
            if let modified {
                node.modifiedSeconds = modified.seconds
                node.modifiedNanoseconds = modified.nanoseconds
            }
        }
        folderRecords.forget([id])
        // (A folder's time set now holds over the changes of its entries before it: `cp -a`, `rsync -a`.)
        if modified != nil { folderTimes.withLock { $0[id] = nil } }
        if let writer = writer(of: id) {
            writer.remember(attributes: written)
            // A time set now holds over the writes before it (`cp -p` sets it before closing).
            if modified != nil { writer.content.setModified() }
        }
    }

    /// Sets or removes (`value` nil) `user.*` attribute `name` of node `id`, as `setxattr(2)` and
    /// `removexattr(2)` do: `mustCreate` of one that exists is `EEXIST`, `mustReplace` or a removal of one
    /// that does not is `ENODATA`, and more than 64 KiB of them on one node is `ENOSPC`.
    package func setExtendedAttribute(_ name: String, to value: [UInt8]?, of id: NodeID,
                                      mustCreate: Bool = false, mustReplace: Bool = false) throws(DarkDiskError) {
        _ = try currentStore()
        defer { forgetRecords([id]) }
        try store.updateDriveAttributes(id) { (attributes) throws(DarkDiskError) in
            let exists = attributes.extendedAttributes[name] != nil
            if mustCreate, exists { throw DarkDiskError(.exists, "\(name) exists") }
            if mustReplace || value == nil, !exists { throw DarkDiskError(.io, "no \(name)", errno: ENODATA) }
            attributes.extendedAttributes[name] = value
            if attributes.extendedAttributesSize > NodeAttributes.maxExtendedAttributesSize {
                throw DarkDiskError(.io, "more than \(NodeAttributes.maxExtendedAttributesSize) bytes of extended attributes", errno: ENOSPC)
            }
        }
    }
}
