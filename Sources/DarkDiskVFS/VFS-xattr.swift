import DarkDiskStore
import DarkDiskSystem
import DarkDiskDrive
#if canImport(Glibc)
import Glibc
#endif

/// The mount's extended attributes (`getfattr`/`setfattr`): per-file persistence, expiration and
/// locality, and the pools' settings and sizes on the mount root. Names and values are checked by
/// `ExtendedAttribute`; this file reads and applies them, and every failure reaches the kernel through `VFSErrno`.
extension VFS {
    /// The value of extended attribute `name` of `ino` (`ENODATA` when it has none of that name).
    package func getxattr(_ ino: Inode, name: String) throws -> [UInt8] {
        // Only `user.` names exist here. The kernel asks for `security.capability` before every write and
        // every `chown`: answered at once, with no index and no wait for the insert of the file being written.
        guard name.hasPrefix("user.") else {
            throw Errno(rawValue: inodes.withLock({ $0.entry(for: ino) }) == nil ? ENOENT : ENODATA)
        }
        // (`user.` attributes are read with the entry's read permission, set with its write permission.)
        try check(ino, .read)
        do { _ = try currentStore() } catch { throw refused("getxattr", error) }
        if let (id, userName) = userAttribute(ino, name) {
            guard let value = try drive.extendedAttributes(of: id)[userName] else { throw Errno(rawValue: ENODATA) }
            return value
        }
        let (entry, attribute) = try resolve(ino, name)
        return Array(try value(of: attribute, on: entry).text.utf8)
    }

    /// The names `listxattr` gives, each ended by a NUL. Lists nothing of darkdisk's own: its attributes are
    /// controls and states read and set by name (`getfattr -n`, `setfattr -n`), as CephFS keeps its `ceph.*`
    /// virtual attributes out of the list. Listed, they were copied by every tool that copies attributes
    /// (`cp -a`, `rsync -X`, `tar --xattrs`), and copying a backup back onto the mount set an old pool limit on
    /// the root, which evicted at once. A drive entry lists the `user.*` attributes kept with its node, which
    /// tools copy.
    package func listxattr(_ ino: Inode) throws -> [UInt8] {
        guard let entry = inodes.withLock({ $0.entry(for: ino) }) else { throw Errno(rawValue: ENOENT) }
        guard let id = entry.driveNode else { return [] }
        return try drive.extendedAttributes(of: id).keys.sorted().flatMap { Array($0.utf8) + [0] }
    }

    /// The node and name of a `user.*` attribute of a drive entry that is not one of darkdisk's own: such
    /// attributes are kept with the node, encrypted in its record.
    private func userAttribute(_ ino: Inode, _ name: String) -> (NodeID, String)? {
        guard name.hasPrefix("user."), !name.hasPrefix(ExtendedAttribute.prefix),
              let id = inodes.withLock({ $0.entry(for: ino) })?.driveNode else { return nil }
        return (id, name)
    }

    /// Sets or removes (`value` nil) a `user.*` attribute of a drive node (`Drive.setExtendedAttribute`).
    private func setUserAttribute(_ id: NodeID, _ name: String, _ value: [UInt8]?, flags: Int32) throws {
        try drive.setExtendedAttribute(name, to: value, of: id, mustCreate: flags & ExtendedAttribute.createFlag != 0,
                                       mustReplace: flags & ExtendedAttribute.replaceFlag != 0)
    }

    /// Sets extended attribute `name` of `ino` to `value` (`flags`: `XATTR_CREATE`, `XATTR_REPLACE`).
    package func setxattr(_ ino: Inode, name: String, value: UnsafeRawBufferPointer, flags: Int32) throws {
        if name.hasPrefix("user.") { try check(ino, .write) }
        _ = try currentStore()
        if let (id, userName) = userAttribute(ino, name) {
            try setUserAttribute(id, userName, Array(value), flags: flags)
            return
        }
        // ACLs, security labels and the like have no place in the drive: tools that copy them (`cp -a`)
        // take EOPNOTSUPP as "not supported here" and go on. The top of the drive, no node, keeps no `user.*`
        // attributes of its own either (only darkdisk's, a pin).
        let entry = inodes.withLock({ $0.entry(for: ino) })
        if entry?.driveNode != nil, !name.hasPrefix("user.") { throw Errno(rawValue: EOPNOTSUPP) }
        if entry == .files, !name.hasPrefix(ExtendedAttribute.prefix) { throw Errno(rawValue: EOPNOTSUPP) }
        do {
            let (entry, attribute) = try resolve(ino, name)
            guard flags & ~(ExtendedAttribute.createFlag | ExtendedAttribute.replaceFlag) == 0 else {
                throw ExtendedAttribute.Failure(.unsupportedFlags, "setxattr flags \(flags) are not XATTR_CREATE or XATTR_REPLACE")
            }
            guard attribute.isWritable else { throw ExtendedAttribute.Failure(.readOnly, "\(attribute.name) is read-only") }
            guard flags & ExtendedAttribute.createFlag == 0 else {
                throw ExtendedAttribute.Failure(.exists, "\(attribute.name) always exists (XATTR_CREATE)")
            }
            let assignment = try attribute.assignment(from: value)
            try apply(assignment, to: entry)
            logger.info("\(entry == .root ? "mount root" : entry.logName): set \(attribute.name) to \(assignment.text)")
        } catch let failure as ExtendedAttribute.Failure {
            if failure.code == .notLocal { logger.notice("\(failure.message)") }
            throw failure
        } catch {
            logger.error("setxattr: \(error)")
            throw error
        }
    }

    /// Removes extended attribute `name` of `ino`.
    package func removexattr(_ ino: Inode, name: String) throws {
        if name.hasPrefix("user.") { try check(ino, .write) }
        _ = try currentStore()
        if let (id, userName) = userAttribute(ino, name) {
            try setUserAttribute(id, userName, nil, flags: 0)
            return
        }
        let (entry, attribute) = try resolve(ino, name)
        // A pin removed: the entry inherits again.
        if attribute == .pin, let target = Self.pinTarget(entry) {
            try manager.outline.setPin(nil, on: target)
            pins?.kick()
            logger.info("\(entry == .root ? "mount root" : entry.logName): removed \(attribute.name)")
            return
        }
        throw ExtendedAttribute.Failure(.readOnly, "\(attribute.name) cannot be removed; set it instead")
    }

    /// What carries attributes: the mount root, the files, and every entry of the drive (a drive file is a
    /// file too); other folders carry none.
    static func holders(of entry: FSEntry) -> [ExtendedAttribute.Holder] {
        switch entry {
        case .root: [.root, .pinnable]
        case .nodeFile: [.file, .pinnable]
        case .thumb, .avatarFile: [.file]
        case .driveFile: [.file, .drive, .pinnable]
        case .driveFolder: [.drive, .pinnable]
        case .driveLink: [.drive]
        case .nodeDirectory, .files: [.pinnable]
        case .nodes, .thumbs, .avatars, .avatarDirectory: []
        }
    }

    /// The node a pin on `entry` is set on (nil: the top, for the root and `/files`).
    private static func pinTarget(_ entry: FSEntry) -> NodeID?? {
        switch entry {
        case .root, .files: .some(nil)
        case .nodeFile(let id, _), .nodeDirectory(let id), .driveFile(let id), .driveFolder(let id): .some(id)
        default: nil
        }
    }

    /// The entry behind `ino` and the attribute `name` names on it; `ENODATA` when the name is not one of ours
    /// or belongs to the other kind of inode (a pool setting asked of a file).
    private func resolve(_ ino: Inode, _ name: String) throws -> (FSEntry, ExtendedAttribute) {
        guard let entry = inodes.withLock({ $0.entry(for: ino) }) else { throw DarkDiskError(.notFound, "no inode \(ino)") }
        let attribute = ExtendedAttribute(name: Array(name.utf8))
        guard let attribute, Self.holders(of: entry).contains(attribute.holder) else {
            throw ExtendedAttribute.Failure(.noSuchAttribute, "no such attribute")
        }
        // A drive file's own attributes are those of its node's data.
        if case .driveFile(let id) = entry, attribute.holder == .file { return (.nodeFile(id, .data), attribute) }
        return (entry, attribute)
    }

    /// The current value of `attribute` on `entry`. A file that is not stored reads as cache (`0`), pool
    /// default expiration (`0`) and `none` or `partial`.
    private func value(of attribute: ExtendedAttribute, on entry: FSEntry) throws(DarkDiskError) -> ExtendedAttribute.Value {
        switch attribute {
        case .persistent:
            return .flag(try storedFile(of: entry)?.mode == .persistent)
        case .expiration:
            return .seconds(try storedFile(of: entry)?.expiration ?? 0)
        case .local:
            if try storedFile(of: entry) != nil { return .locality(.full) }
            guard case .nodeFile(let id, .data) = entry else { return .locality(.absent) }
            // A download running here knows what it has before the index does (its checkpoints lag).
            let partial = try manager.files.partialDownload(id)
            let received = max(downloads?.receivedBytes(ofRunningDownload: id) ?? 0, partial?.receivedBytes ?? 0)
            guard received > 0 else { return .locality(.absent) }
            var size = partial?.size ?? 0
            if size == 0 { size = try manager.outline.entry(id)?.dataSize ?? 0 }
            guard size > 0 else { return .locality(.partial) }
            // All of it arrived, yet it is not stored: a finished download whose file went (evicted).
            guard received < size else { return .locality(.absent) }
            return .partial(percent: Int(received * 100 / size))
        case .pin:
            switch Self.pinTarget(entry) {
            case .some(nil): return .flag(try manager.outline.pinSetting(nil) ?? false)
            case .some(let id?): return .flag(try manager.outline.isPinned(id))
            case nil: throw DarkDiskError(.notFound, "\(entry.logName) cannot be pinned")
            }
        case .sync:
            let id: NodeID
            switch entry {
            case .nodeFile(let node, _), .thumb(let node): id = node
            default: return .sync(.synced)  // avatars: pushed by their own command, never queued
            }
            if let queued = try manager.uploadQueue.change(of: id) {
                switch queued.state {
                case .pending: return .sync(.pending)
                case .uploading: return .sync(.uploading)
                case .failed: return .sync(.failed)
                }
            }
            if try manager.outline.conflictCopies().contains(where: { $0.nodeID == id }) { return .sync(.conflict) }
            return .sync(try manager.outline.entry(id) == nil ? .local : .synced)
        case .node:
            // (`resolve` gives it on drive entries only.)
            switch entry {
            case .driveFolder(let id), .driveFile(let id), .driveLink(let id): return .node(id)
            default: throw DarkDiskError(.notFound, "\(entry.logName) is not a drive entry")
            }
        case .remote:
            return .text(health?.current.text ?? "online")
        case .pool(let pool, let field):
            switch field {
            case .maxSize: return .bytes(try manager.files.settings(for: pool).maxSize)
            case .defaultExpiration: return .seconds(try manager.files.settings(for: pool).defaultExpiration)
            case .size: return .bytes(try manager.files.storageSize(of: pool))
            case .persistentSize: return .bytes(try manager.files.storageSize(of: pool, mode: .persistent))
            case .cachedSize: return .bytes(try manager.files.storageSize(of: pool, mode: .cache))
            }
        }
    }

    /// Carries out a validated write. Pool settings act at once (a lower max size evicts, a shorter default
    /// expiration expires). A file's persistence and expiration need the file stored here: `notLocal` if not.
    private func apply(_ assignment: ExtendedAttribute.Assignment, to entry: FSEntry) throws {
        let notLocal = ExtendedAttribute.Failure(.notLocal, "\(entry.logName) is not stored here, so it has nothing to migrate or expire; read or fetch it first")
        switch (assignment, entry) {
        case (.persistent(let on), .nodeFile(let id, let kind)):
            guard try manager.files.makeNodeFilePersistent(on, nodeID: id, kind: kind) else { throw notLocal }
        case (.persistent(let on), .thumb(let id)):
            guard try manager.files.makeNodeFilePersistent(on, nodeID: id, kind: .thumbnail) else { throw notLocal }
        case (.persistent(let on), .avatarFile(let user, let identity)):
            // The store keeps a user's avatars together: they move between pools as one.
            guard try manager.files.storedAvatar(user, identityID: identity) != nil else { throw notLocal }
            try manager.files.makeUserAvatarsPersistent(on, userID: user)
        case (.expiration(let seconds), .nodeFile(let id, let kind)):
            guard try manager.files.setExpiration(Double(seconds), nodeID: id, kind: kind) else { throw notLocal }
        case (.expiration(let seconds), .thumb(let id)):
            guard try manager.files.setExpiration(Double(seconds), nodeID: id, kind: .thumbnail) else { throw notLocal }
        case (.expiration(let seconds), .avatarFile(let user, let identity)):
            guard try manager.files.setExpiration(Double(seconds), userID: user, identityID: identity) else { throw notLocal }
        case (.maxSize(let pool, let bytes), .root):
            try manager.files.setMaxSize(bytes, for: pool)
        case (.defaultExpiration(let pool, let seconds), .root):
            try manager.files.setDefaultExpiration(Double(seconds), for: pool)
        case (.pin(let on), _):
            guard let target = Self.pinTarget(entry) else { throw ExtendedAttribute.Failure(.noSuchAttribute, "no such attribute") }
            try manager.outline.setPin(on, on: target)
            pins?.kick()
        case (.evict, .nodeFile(let id, .data)):
            try manager.outline.evictNodeData(id)
            return
        default:
            // `resolve` only pairs file attributes with files and pool attributes with the root.
            throw ExtendedAttribute.Failure(.noSuchAttribute, "no such attribute")
        }
        // A cache file purged from disk behind the index's back is dropped by the migration: say so.
        if case .persistent = assignment, try storedFile(of: entry) == nil { throw notLocal }
    }
}
