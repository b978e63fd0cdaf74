import CFuse3
import DarkDisk
import Dispatch
import Foundation
import Logging
import Synchronization
import DarkDiskSync

/// Watches the store's outline while the mount runs (a `pull` in another process changes it) and tells the
/// kernel to forget the names of nodes and avatars that changed, appeared or went under `/nodes`, `/thumbs`
/// and `/avatars`, so the next lookup finds the new version's inode.
///
/// It never invalidates an inode's pages: a file inode serves one version for good (`InodeTable`), so its
/// pages stay true, and an invalidation waits for the lock of every page, including one that a read
/// waiting on the remote holds. Blocked there, this thread could not die with the daemon, and the
/// connection (and every reader waiting on it) would hang until aborted by hand.
final class OutlineWatcher: Sendable {
    private let fileSystem: FuseFileSystem
    private let session: UnsafeSession
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    private let known: Locked<Snapshot>

    /// The outline as last seen: nodes and the avatars of user records.
    private struct Snapshot {
        var version: Int64
        var outline: [NodeID: OutlineEntry]
        var avatars: Set<AvatarOutlineEntry>
    }

    /// libfuse's session pointer: its notify calls may come from any thread while the session lives.
    struct UnsafeSession: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    /// Checks every `interval` on a thread of its own (a notify call may wait on the kernel: never on a FUSE
    /// worker or the concurrency pool).
    init(fileSystem: FuseFileSystem, session: OpaquePointer, interval: DispatchTimeInterval = .seconds(1)) throws(DarkDiskError) {
        self.fileSystem = fileSystem
        self.session = UnsafeSession(pointer: session)
        let manager = fileSystem.manager
        known = Locked(Snapshot(version: try manager.outlineVersion(),
                               outline: Dictionary(uniqueKeysWithValues: try manager.outline().map { ($0.nodeID, $0) }),
                               avatars: Set(try manager.avatarOutline())))
        Thread.detachNewThread { [self] in
            while !stopped.load(ordering: .acquiring) {
                _ = wake.wait(timeout: .now() + interval)
                if stopped.load(ordering: .acquiring) { break }
                check()
            }
            finished.signal()
        }
    }

    /// Stops watching and waits for the watcher's thread; call before the session is destroyed.
    func stop() {
        stopped.store(true, ordering: .releasing)
        wake.signal()
        finished.wait()
    }

    private func check() {
        let manager = fileSystem.manager
        do {
            let version = try manager.outlineVersion()
            guard version != known.withLock({ $0.version }) else { return }
            let current = Dictionary(uniqueKeysWithValues: try manager.outline().map { ($0.nodeID, $0) })
            let currentAvatars = Set(try manager.avatarOutline())
            let (previous, previousAvatars) = known.withLock { state in
                defer { state = Snapshot(version: version, outline: current, avatars: currentAvatars) }
                return (state.outline, state.avatars)
            }
            let avatarChanges = currentAvatars.symmetricDifference(previousAvatars)
            for avatar in avatarChanges { invalidateAvatar(avatar) }
            var changed: [NodeID] = []
            var appearedOrGone: [NodeID] = []
            for (id, old) in previous {
                if let new = current[id] { if new != old { changed.append(id) } } else { appearedOrGone.append(id) }
            }
            for id in current.keys where previous[id] == nil { appearedOrGone.append(id) }
            for id in changed + appearedOrGone { invalidateNames(of: id) }
            if !(changed.isEmpty && appearedOrGone.isEmpty && avatarChanges.isEmpty) {
                fileSystem.logger.info("the outline changed: \(changed.count) nodes changed, \(appearedOrGone.count) appeared or went, \(avatarChanges.count) avatar listings changed")
            }
        } catch {
            fileSystem.logger.error("cannot read the outline: \(error)")
        }
    }

    /// Drops the names of an avatar whose listing appeared, went or changed, and its user's name.
    private func invalidateAvatar(_ avatar: AvatarOutlineEntry) {
        for (parent, name) in [(FSEntry.avatars, avatar.userID.rawValue), (.avatarDirectory(avatar.userID), avatar.identityID.rawValue)] {
            guard let ino = fileSystem.inodes.withLock({ $0.existingInode(for: parent) }) else { continue }
            _ = name.withCString { fuse_lowlevel_notify_inval_entry(session.pointer, ino, $0, name.utf8.count) }
        }
    }

    private func invalidateNames(of id: NodeID) {
        for (parent, name) in [(FSEntry.nodes, id.rawValue), (.thumbs, id.rawValue), (.nodeDirectory(id), "data"),
                               (.nodeDirectory(id), "metadata"), (.nodeDirectory(id), "thumbnail")] {
            guard let ino = fileSystem.inodes.withLock({ $0.existingInode(for: parent) }) else { continue }
            _ = name.withCString { fuse_lowlevel_notify_inval_entry(session.pointer, ino, $0, name.utf8.count) }
        }
    }
}
