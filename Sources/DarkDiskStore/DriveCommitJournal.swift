import DarkDiskCrypto
import DarkDiskSync
import DarkDiskSystem
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The drive's commit journal (`drive-commits.journal` beside the index): how a `close` in the mount commits
/// a drive file with one `write`, not one index transaction. The new version is sealed and named in place,
/// its rows are appended here (`DriveCommitRecord`), and the `close` returns: the kernel holds the record, so
/// a daemon killed from then on loses nothing. One thread writes the records waiting into the index, as many
/// as are waiting in one transaction, which also notes the last one it wrote (`driveJournal.appliedThrough`),
/// so a record is written once; the file is emptied once the index has them all. The next opening of the
/// store writes what a killed daemon left (`DiskManager.replayDriveJournal`). The daemon holds an exclusive
/// `flock` on the file while it journals, so nobody else replays what it is still writing.
final class DriveCommitJournal: Sendable {
    /// A record waiting for the index, with the row the commit hands out and whom to tell. It holds no
    /// descriptor: what keeps an orphan sweep (in any process) from taking its stored file before the index
    /// names it is the record itself, which the sweep reads (`DiskManager.isJournaled`). `isLive`: appended by
    /// this process (not replayed from a stopped daemon's journal).
    struct Pending: Sendable {
        let record: DriveCommitRecord
        let isLive: Bool
        /// The file row a commit inserts (nil for a removal).
        let fileRecord: FileRecord?
        let completion: @Sendable (DriveCommitOutcome) -> Void
    }

    /// Writes `Pending`s into the index in one transaction, returns each one's outcome; throws when the
    /// transaction could not run (all of them wait, and are tried again).
    typealias Apply = @Sendable ([Pending]) throws(DarkDiskError) -> [DriveCommitOutcome]

    let path: String
    /// The journal, open for appending, with the exclusive lock: closed (and unlocked) by `stop`, under
    /// `file`.
    private let descriptor: OwnedDescriptor
    /// Seals each record's payload (a store with a passphrase: a new file's name is in it); nil: in the clear.
    private let key: SymmetricKey?
    private let apply: Apply
    private let logger: @Sendable (String) -> Void
    /// Broadcast whenever records are written (or dropped): drains, and appends waiting for room, look again.
    /// Only values are read and changed under it: the file's I/O is under `file`, taken first.
    private let state: Locked<State>
    /// The journal file's serializer: an append seals and writes its record under it (in sequence order), and
    /// the journal is emptied under it; lookups that ask what waits (`state`) never wait behind that I/O.
    private let file = Locked(FileState())
    private let queue = DispatchQueue(label: "darkdisk.drive-commits")
    /// How long the first record of a batch waits for others (unless a drain wants it sooner, or the batch is
    /// full). Nothing in the mount waits for it (a `close` returns once its record is appended; whatever
    /// needs the index drains): it only delays when other processes see a new version, and a long one
    /// gathers a `tar x`'s commits into few transactions. Each transaction has a fixed cost (its log pages,
    /// its bookkeeping rows, its wake-ups): 5 ms batches cost the daemon about a fifth more CPU per file
    /// (`Docs/PERFORMANCE.md`, runs 47 and after).
    static let gathering: DispatchTimeInterval = .milliseconds(100)
    /// The most records a batch gathers before it is written at once.
    static let fullBatch = 256
    /// The most records that may wait for the index: an append beyond it waits (up to `backlogWait`) for the
    /// index to catch up, so a burst of closes faster than the index (a loaded machine, an upload holding the
    /// index) cannot grow the backlog, and with it the time a listing waits for it, without bound.
    static let backlogLimit = 4 * fullBatch
    /// How long an append waits for room in the backlog before it goes in anyway (the index is failing: the
    /// record is safe in the journal either way, and costs only memory).
    static let backlogWait = 10.0
    /// Quick checks on every request: whether anything waits at all.
    private let outstanding = Atomic<Int>(0)
    /// Batches the index has taken, counted once a batch's transaction commits and before its records stop
    /// counting as waiting: a read of the index between two looks at it, with no record of a node waiting
    /// at the second, has seen every record of that node.
    private let landed = Atomic<UInt64>(0)

    /// What only the writer of the journal's file needs.
    private struct FileState: Sendable {
        /// The sequence the next record takes (set when the journal is taken over).
        var nextSequence: UInt64 = 0
    }

    private struct State: Sendable {
        /// The last record appended, and the last one the index has (or that was dropped).
        var appended: UInt64
        var processed: UInt64
        var waiting: [Pending] = []
        var scheduled = false
        var failing = false
        var stopped = false
        /// Records waiting, by node and by (folder, name) of the nodes they insert or remove.
        var nodes: [String: Int] = [:]
        var names: [NameKey: Int] = [:]
        /// Records waiting, by the folder whose entries they make or remove ("": the top).
        var folders: [String: Int] = [:]

        /// Records appended that the index does not have yet (sequences are consecutive); none once stopped.
        var backlog: Int { stopped ? 0 : Int(appended - processed) }
    }

    /// A folder and a name in it, the name compared as its bytes (`DriveNames.Bytes`).
    struct NameKey: Hashable, Sendable {
        let parentID: String?
        let name: DriveNames.Bytes

        init(parentID: String?, name: String) {
            self.parentID = parentID
            self.name = DriveNames.Bytes(name)
        }
    }

    /// How long this journal's batches gather (`DriveCommitJournal.gathering`; a test's may wait longer).
    private let batchGathering: DispatchTimeInterval

    /// Takes over the journal at `path` (open as `descriptor`, locked exclusively, emptied): sequences continue
    /// after `after`.
    init(path: String, descriptor: OwnedDescriptor, after sequence: UInt64, key: SymmetricKey? = nil, gathering: DispatchTimeInterval = DriveCommitJournal.gathering,
         apply: @escaping Apply, logger: @escaping @Sendable (String) -> Void) {
        self.path = path
        self.descriptor = descriptor
        self.key = key
        batchGathering = gathering
        self.apply = apply
        self.logger = logger
        state = Locked(State(appended: sequence, processed: sequence))
        file.withLock { $0.nextSequence = sequence + 1 }
    }

    /// Appends `record` (given its sequence here) and queues it for the index; once this returns, the record
    /// outlives the process. `make` builds the pending entry from the numbered record.
    func append(_ make: (UInt64) -> Pending) throws(DarkDiskError) {
        if state.withLock({ $0.backlog >= Self.backlogLimit }) { waitForRoom() }
        try file.withLock { (file) throws(DarkDiskError) in
            guard !state.withLock({ $0.stopped }) else { throw DarkDiskError(.io, "the drive's commit journal is closed") }
            let pending = make(file.nextSequence)
            let bytes: [UInt8]
            do { bytes = try pending.record.framed(sealedWith: key) } catch {
                throw DarkDiskError(.io, "cannot seal a record of the drive's commit journal: \(error)")
            }
            let end = lseek(descriptor.rawValue, 0, SEEK_END)
            let failure = bytes.withUnsafeBytes { buffer -> Errno? in
                do throws(Errno) { try descriptor.write(from: buffer.baseAddress!, count: buffer.count) } catch { return error }
                return nil
            }
            if let failure {
                // A part written would stop a replay there: it goes (if it can: the replay stops at it otherwise).
                if end >= 0 { try? descriptor.truncate(to: UInt64(end)) }
                throw DarkDiskError.posix("cannot append to", path: path, errno: failure.rawValue)
            }
            file.nextSequence += 1
            // The record is in the file: a `stop` from now on leaves it there for the next opening.
            state.withLock { state in record(pending, &state) }
        }
    }

    /// Notes an appended record as waiting for the index and schedules its batch. Under the state lock. A
    /// journal stopped meanwhile leaves it in the file, for the store's next opening.
    private func record(_ pending: Pending, _ state: inout State) {
        guard !state.stopped else { return }
        state.appended = pending.record.sequence
        state.waiting.append(pending)
        state.nodes[pending.record.nodeID, default: 0] += 1
        if let named = pending.record.name {
            state.names[NameKey(parentID: named.parentID, name: named.name), default: 0] += 1
            state.folders[named.parentID ?? "", default: 0] += 1
        }
        outstanding.wrappingAdd(1, ordering: .releasing)
        if state.waiting.count == Self.fullBatch {
            queue.async { self.run() }
        } else if !state.scheduled {
            state.scheduled = true
            // A moment's wait gathers the commits of a `tar x` or `cp -r` into one transaction; a drain does
            // not wait for it.
            queue.asyncAfter(deadline: .now() + batchGathering) { self.run() }
        }
    }

    /// Waits until fewer than `backlogLimit` records wait, at most `backlogWait` seconds.
    private func waitForRoom() {
        queue.async { self.run() }
        state.withLock(when: { $0.backlog < Self.backlogLimit }, before: .now + .seconds(Self.backlogWait)) { _, _ in }
    }

    /// Batches the index has taken so far (`landed`).
    var landedBatches: UInt64 { landed.load(ordering: .acquiring) }

    /// Whether records wait for the index.
    var isIdle: Bool { outstanding.load(ordering: .acquiring) == 0 }

    /// Whether a record of node `nodeID` waits for the index.
    func isPending(node nodeID: String) -> Bool {
        guard !isIdle else { return false }
        return state.withLock { $0.nodes[nodeID] != nil }
    }

    /// Whether a record inserting or removing an entry of folder `folderID` (nil: the top) waits for the index.
    func isPending(inFolder folderID: String?) -> Bool {
        guard !isIdle else { return false }
        return state.withLock { $0.folders[folderID ?? ""] != nil }
    }

    /// Whether a record inserting or removing a node named `name` in folder `parentID` waits for the index.
    func isPending(name: String, in parentID: String?) -> Bool {
        guard !isIdle else { return false }
        return state.withLock { $0.names[NameKey(parentID: parentID, name: name)] != nil }
    }

    /// Waits until the index has every record appended before the call (at most `timeout` seconds); whether
    /// it does.
    @discardableResult
    func drain(timeout: Double? = nil) -> Bool {
        guard !isIdle else { return true }
        let target = state.withLock { $0.appended }
        queue.async { self.run() }
        return state.withLock(when: { $0.processed >= target || $0.stopped }, before: timeout.map { .now + .seconds($0) }) { state, _ in
            state.processed >= target
        }
    }

    /// Appends and writes nothing more, and lets go of the file (and its lock) and of the stored files' locks:
    /// what still waits stays in the journal for the store's next opening, which writes it into the index
    /// before it looks for orphans. Drains waiting return.
    func stop() {
        let first = state.withLock { state in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        // A batch being written lands (with its `appliedThrough`) before the file's lock goes: whoever takes
        // the lock next replays only what is really left.
        queue.sync {}
        file.withLock { _ in try? descriptor.close() }  // after any append in progress: its record is in the file
        state.withLock { state in state.waiting = [] }
        state.broadcast()
    }

    /// Writes what waits into the index: one batch, then the next after another moment's gathering (at once
    /// when a drain asks); empties the journal once the index has every record.
    private func run() {
        // The batch leaves `waiting` (a `stop` meanwhile leaves its locks to this round).
        let batch = state.withLock { state -> [Pending] in
            guard !state.stopped, !state.waiting.isEmpty else { return [] }
            defer { state.waiting = [] }
            return state.waiting
        }
        guard !batch.isEmpty else { return }
        let outcomes: [DriveCommitOutcome]
        do throws(DarkDiskError) {
            outcomes = try apply(batch)
            landed.wrappingAdd(1, ordering: .releasing)
        } catch {
            let retry = state.withLock { state -> Bool in
                guard !state.stopped else {
                    state.scheduled = false
                    return false
                }
                if !state.failing { logger("drive commits wait for the index (tried again every second): \(error)") }
                state.failing = true
                state.waiting.insert(contentsOf: batch, at: 0)
                return true
            }
            if retry { queue.asyncAfter(deadline: .now() + 1) { self.run() } }
            return
        }
        // (Told before a drain returns: what waits for the index sees what followed from it.)
        for (pending, outcome) in zip(batch, outcomes) { pending.completion(outcome) }
        let empty = state.withLock { state -> Bool in
            if state.failing { logger("drive commits reach the index again") }
            state.failing = false
            state.processed = batch.last!.record.sequence
            for pending in batch {
                let node = pending.record.nodeID
                state.nodes[node, default: 1] -= 1
                if state.nodes[node] == 0 { state.nodes[node] = nil }
                if let named = pending.record.name {
                    let folder = named.parentID ?? ""
                    state.folders[folder, default: 1] -= 1
                    if state.folders[folder] == 0 { state.folders[folder] = nil }
                    let key = NameKey(parentID: named.parentID, name: named.name)
                    state.names[key, default: 1] -= 1
                    if state.names[key] == 0 { state.names[key] = nil }
                }
            }
            if state.stopped {
                state.scheduled = false
            } else if state.waiting.isEmpty {
                state.scheduled = false
                return state.processed == state.appended
            } else {
                queue.asyncAfter(deadline: .now() + batchGathering) { self.run() }
            }
            return false
        }
        if empty {
            // Everything is in the index: the journal starts over, unless a record was appended meanwhile
            // (looked at again under the file's lock, which appends take first).
            file.withLock { _ in
                guard state.withLock({ !$0.stopped && $0.processed == $0.appended }) else { return }
                do { try descriptor.truncate(to: 0) } catch {
                    logger("cannot empty the drive's commit journal \(path): \(error)")
                }
            }
        }
        outstanding.wrappingSubtract(batch.count, ordering: .releasing)
        state.broadcast()
    }
}

/// What became of a drive commit the journal held.
package enum DriveCommitOutcome: Sendable {
    /// In the index.
    case indexed
    /// Not stored: the node was deleted meanwhile (`nil`), or the index refused the rows (why).
    case dropped(DarkDiskError?)
}
