import DarkDiskStore

/// Reading the drive: the outline's named nodes as a tree of folders, files and links, with the sizes,
/// modes and times their records give (before anything is downloaded), and a file open for writing here
/// as its writer has it.
extension Drive {
    /// The entry named `name` in `folder` (nil: the top of the drive) with its attributes, as a lookup
    /// answers it; nil when there is none.
    package func lookup(_ name: String, in folder: NodeID?) throws(DarkDiskError) -> (node: DriveNode, attributes: DriveAttributes)? {
        creates.drain()
        // Journaled commits need not be in the index first, unless one makes this name (a node found whose
        // commit waits is settled when its attributes are read, `attributes(of:kind:)`).
        if !store.driveCommitsIdle, store.hasPendingDriveCommit(named: name, in: folder) { try waitForCommits() }
        if let folder, let listed = try listedChild(of: folder, named: name) { return listed }
        guard let node = try child(of: folder, named: name) else { return nil }
        return try attributes(of: node.id, kind: node.attributes.kind)
    }

    /// The entry named `name` in `folder`, once the store has every change of that name taken so far (a new
    /// file's row, a record that makes or removes the name): for a change of it (a rename).
    package func child(named name: String, in folder: NodeID?) throws(DarkDiskError) -> DriveNode? {
        creates.drain()
        if !store.driveCommitsIdle, store.hasPendingDriveCommit(named: name, in: folder) { try waitForCommits() }
        return try child(of: folder, named: name)
    }

    /// The entry named `name` in `folder`, from the index as it is. Usually one node holds the name; when
    /// several do, the earliest made keeps it, and a later one is found by its suffixed name (`DriveNames`).
    func child(of folder: NodeID?, named name: String) throws(DarkDiskError) -> DriveNode? {
        let holders = try store.driveChildren(of: folder, named: name)
        if let first = holders.min(by: { ($0.created, $0.id.rawValue) < ($1.created, $1.id.rawValue) }) { return first }
        guard let id = DriveNames.suffixID(of: name), let node = try store.driveNode(id), node.parentID == folder else { return nil }
        let siblings = try store.driveChildren(of: folder, named: node.name)
        let shown = DriveNames.shown(siblings.map { DriveNames.Child(id: $0.id, name: $0.name, created: $0.created) })
        return shown.contains { $0.id == id && DriveNames.same($0.name, name) } ? node : nil
    }

    /// The file or link named `name` in `folder` and its attributes from one index read
    /// (`DiskManager.driveListedChildren`: the node with its data), when that read says all: no writer here,
    /// and no commit of it waiting for the index. Nil when the name needs more (a folder, a suffixed name, a
    /// file being written, a commit of it in the journal or landing meanwhile): `lookup` then reads the child and its attributes apart.
    private func listedChild(of folder: NodeID, named name: String) throws(DarkDiskError) -> (node: DriveNode, attributes: DriveAttributes)? {
        // (A writer that goes after this mark makes `attributes(of:listed:)` read its data again.)
        let removals = writers.withLock { $0.removals }
        // A commit journaled before the mark (its writer gone) and indexed between this read and the look at
        // the journal after it would leave the read behind it: no batch may land in between.
        let landed = store.driveCommitsLanded
        let holders = try store.driveListedChildren(of: folder, named: name)
        guard let first = holders.min(by: { ($0.node.created, $0.node.id.rawValue) < ($1.node.created, $1.node.id.rawValue) }) else { return nil }
        guard first.node.attributes.kind != .folder else { return nil }
        let id = first.node.id
        guard store.driveCommitsIdle || (!store.hasPendingDriveCommit(id) && store.driveCommitsLanded == landed), writer(of: id) == nil else { return nil }
        guard let attributes = try attributes(of: first.node, listed: (first, removals)) else { return nil }
        return (first.node, attributes)
    }

    /// Lets in what a listing of `folder` must see: the rows of new files, and the journal's records that make
    /// or remove its entries (not the whole journal: `rm -rf` lists each folder as it empties the one before).
    func settleEntries(of folder: NodeID?) throws(DarkDiskError) {
        creates.drain()
        if !store.driveCommitsIdle, store.hasPendingDriveCommit(inFolder: folder) { try waitForCommits() }
    }

    /// The entries of `folder` (nil: the top) by the names they show.
    package func children(of folder: NodeID?) throws(DarkDiskError) -> [(name: String, node: DriveNode)] {
        try settleEntries(of: folder)
        let nodes = try store.driveChildren(of: folder)
        var byID: [NodeID: DriveNode] = [:]
        for node in nodes { byID[node.id] = node }
        return DriveNames.shown(nodes.map { DriveNames.Child(id: $0.id, name: $0.name, created: $0.created) }).compactMap { shown in
            byID[shown.id].map { (shown.name, $0) }
        }
    }

    /// The entries of `folder` (nil: the top) by the names they show, with their attributes, from the one
    /// query that lists the folder with its files' data (`DiskManager.driveListing`).
    package func listing(of folder: NodeID?) throws(DarkDiskError) -> [(name: String, node: DriveNode, attributes: DriveAttributes)] {
        // (A writer that went before this mark committed into the journal: the listing reads after the index has it.)
        let removals = writers.withLock { $0.removals }
        try settleEntries(of: folder)
        let landed = store.driveCommitsLanded
        var nodes = try store.driveListing(of: folder)
        // A file of it whose commit waits, or a batch landed since the read: read after the index has them all.
        if !store.driveCommitsIdle, store.driveCommitsLanded != landed || nodes.contains(where: { store.hasPendingDriveCommit($0.node.id) }) {
            nodes = try currentStore().driveListing(of: folder)
        }
        var byID: [NodeID: DriveListedNode] = [:]
        byID.reserveCapacity(nodes.count)
        for listed in nodes { byID[listed.node.id] = listed }
        var listing: [(name: String, node: DriveNode, attributes: DriveAttributes)] = []
        listing.reserveCapacity(nodes.count)
        for shown in DriveNames.shown(nodes.map { DriveNames.Child(id: $0.node.id, name: $0.node.name, created: $0.node.created) }) {
            guard let entry = byID[shown.id], let attributes = try attributes(of: entry.node, listed: (entry, removals)) else { continue }
            listing.append((shown.name, entry.node, attributes))
        }
        return listing
    }

    /// Node `id` and its attributes now, if it is still an entry of that kind (nil: gone, or no longer one).
    /// A file's size is that of its staged content while it is open for writing here, else of its node's data
    /// (a file made but never committed, by a process that died, is empty); its mode and times come from the
    /// node's record.
    package func attributes(of id: NodeID, kind: NodeAttributes.Kind) throws(DarkDiskError) -> (node: DriveNode, attributes: DriveAttributes)? {
        switch kind {
        case .folder:
            let (known, generation) = folderRecords.record(id)
            if let known { return try attributes(of: known).map { (known, $0) } }
            guard let node = try store.driveNode(id), node.attributes.kind == kind else { return nil }
            folderRecords.remember(node, ifStill: generation)
            return try attributes(of: node).map { (node, $0) }
        case .file, .symlink:
            // A file open for writing here: its record as the writer knows it (read once, then kept).
            let writer = kind == .file ? writer(of: id) : nil
            let (known, generation) = writer?.knownRecord ?? (nil, 0)
            if let known { return try attributes(of: known).map { (known, $0) } }
            // (The mark before the wait: a writer that goes after it makes `attributes(of:listed:)` read its data again.)
            let removals = writers.withLock { $0.removals }
            try settle(id)
            guard let listed = try store.driveListedNode(id), listed.node.attributes.kind == kind else { return nil }
            writer?.remember(listed.node, ifStill: generation)
            return try attributes(of: listed.node, listed: (listed, removals)).map { (listed.node, $0) }
        }
    }

    /// The attributes of `node` as its entry shows them (nil: a link without a target). `listed`: the node as
    /// a listing read it, with its data's state, and the count of writers gone when it was read
    /// (`DriveWriterTable.removals`); else, or if a writer went since, its data is read here.
    func attributes(of node: DriveNode, listed: (node: DriveListedNode, removals: UInt64)? = nil) throws(DarkDiskError) -> DriveAttributes? {
        let record = node.attributes
        var attributes = DriveAttributes(kind: record.kind, permissions: record.mode & 0o7777, size: 0, allocated: 0)
        var pending: StagedContent.AttributeChanges?
        switch record.kind {
        case .folder:
            attributes.links = 2 + UInt32(try store.driveSubfolderCount(of: node.id))
        case .symlink:
            guard let target = record.target else { return nil }
            attributes.size = UInt64(target.utf8.count)
        case .file:
            if let writer = writer(of: node.id) {
                attributes.size = writer.content.size
                attributes.allocated = attributes.size
                pending = writer.content.pendingAttributes
            } else if let listed, writers.withLock({ $0.removals }) == listed.removals {
                attributes.take(listed.node.data, remoteSize: listed.node.remoteDataSize)
            } else {
                // No writer now: what one wrote is committed, in the journal or the index; read after the index
                // has it (else a writer that went since the caller looked would leave its size behind, and a
                // writer that went since a listing was read too: the kernel would append at an old end).
                try settle(node.id)
                if let data = try store.driveFileData(node.id) { attributes.take(data.data, remoteSize: data.remoteDataSize) }
            }
        }
        // The record's modification time (the change time follows it), and its change time (`ctime`: when the
        // drive last changed it) where the index knows one.
        if let seconds = record.modifiedSeconds {
            let time = DriveTime(seconds: seconds, nanoseconds: record.modifiedNanoseconds)
            attributes.modified = time
            attributes.changed = time
        }
        if let changed = node.changed.flatMap(DriveTime.init) { attributes.changed = changed }
        // A folder whose entries changed here since: that time (the index may not have the change yet).
        if record.kind == .folder, let touched = folderTimes.withLock({ $0[node.id] }) {
            if attributes.modified.map({ touched > $0 }) ?? true { attributes.modified = touched }
            if attributes.changed.map({ touched > $0 }) ?? true { attributes.changed = touched }
        }
        // Written or changed since its last commit: as its writer has it.
        if let pending {
            if let mode = pending.mode { attributes.permissions = mode & 0o7777 }
            if let change = pending.modified { attributes.modified = DriveTime(seconds: change.seconds, nanoseconds: change.nanoseconds) }
            if let change = pending.changed {
                let time = DriveTime(seconds: change.seconds, nanoseconds: change.nanoseconds)
                if attributes.changed.map({ time > $0 }) ?? true { attributes.changed = time }
            }
        }
        return attributes
    }

    /// The link count of the top of the drive: 2 and one per folder in it.
    package func topLinks() throws(DarkDiskError) -> UInt32 {
        2 + UInt32(try store.driveSubfolderCount(of: nil))
    }

    /// The target of link `id` (nil: gone, or not a link).
    package func linkTarget(_ id: NodeID) throws(DarkDiskError) -> String? {
        try currentStore().driveNode(id)?.attributes.target
    }

    /// The `user.*` extended attributes kept with node `id`.
    package func extendedAttributes(of id: NodeID) throws(DarkDiskError) -> [String: [UInt8]] {
        try currentStore().outline.attributes(of: id).extendedAttributes
    }

    /// Where the current version of drive file `id` is, for a handle reading it to change over to: the
    /// stored file, else the remote's (its outline entry), else nowhere (deleted, or never committed).
    package func currentData(of id: NodeID) throws(DarkDiskError) -> DriveData {
        // (Its stored version is the index's: a commit of it still in the journal lands first.)
        try settle(id)
        if let export = try store.files.nodeFile(id, kind: .data) { return .stored(export) }
        if let outline = try store.outline.entry(id) { return .remote(outline) }
        return .none
    }
}

/// Where a drive file's data is.
package enum DriveData: Sendable {
    case stored(DiskExport)
    case remote(OutlineEntry)
    case none
}

extension DriveAttributes {
    /// Takes the size, blocks and times of a file's stored data, or the remote's size when only it has it.
    mutating func take(_ data: StoredFile?, remoteSize: UInt64?) {
        guard let data else {
            size = remoteSize ?? 0
            return
        }
        size = data.plaintextSize
        allocated = data.storedSize
        let modified = DriveTime(seconds: Int64(data.modified.timeIntervalSince1970), nanoseconds: 0)
        self.modified = modified
        changed = modified
        accessed = DriveTime(seconds: Int64(data.lastAccess.timeIntervalSince1970), nanoseconds: 0)
    }
}
