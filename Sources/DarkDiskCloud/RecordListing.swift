import DarkDiskStore
import Foundation

/// The node records a listing of `records/` holds, read and opened: one per node. Objects are named by a
/// key the bucket's owner cannot compute (`CloudLayout.nodeName`), so a record's node is what opening it
/// says; one that does not open is matched by name to a node this store knows, so that node is kept and
/// named in the refusal.
struct RecordListing {
    /// One node's record object: its key, its node (nil: an unknown name whose object did not open) and
    /// what opening it gave.
    struct Entry {
        let key: String
        let nodeID: NodeID?
        let opened: Result<OpenedRecord, RemoteError>
    }

    let entries: [Entry]

    /// Reads (with `read`; nil: gone since the listing) and opens every record object among `objects`. A
    /// node with a record under its keyed name and one under its ID (left by a push whose delete of the
    /// older did not happen) is its keyed one's. `knownNodes`: every node this store knows of.
    static func read(_ objects: [ObjectInfo], knownNodes: @autoclosure () throws -> Set<NodeID>, with manager: DiskManager,
                     read: (ObjectInfo) async throws(RemoteError) -> Data?) async throws -> RecordListing {
        var names: [String: NodeID]?
        // Which of a node's objects is its record: keyed (2) over by ID (1) over plain JSON (0, refused).
        var chosen: [NodeID: (entry: Entry, rank: Int)] = [:]
        var unknown: [Entry] = []
        for object in objects {
            guard let name = CloudLayout.recordName(ofKey: object.key), let data = try await read(object) else { continue }
            let entry: Entry
            let rank: Int
            do {
                let opened = try RecordObject.read(data, key: object.key, with: manager)
                entry = Entry(key: object.key, nodeID: opened.nodeID, opened: .success(opened))
                rank = opened.keyedNames ? 2 : 1
            } catch {
                if names == nil {
                    var map: [String: NodeID] = [:]
                    for id in try knownNodes() {
                        map[id.rawValue] = id
                        map[CloudLayout.nodeName(id, with: manager)] = id
                    }
                    names = map
                }
                guard let id = names?[name.name] else {
                    unknown.append(Entry(key: object.key, nodeID: nil, opened: .failure(error)))
                    continue
                }
                // Read again for the node: the refusal names it.
                let named: RemoteError
                do { _ = try RecordObject.read(data, key: object.key, expected: id, with: manager); named = error } catch { named = error }
                entry = Entry(key: object.key, nodeID: id, opened: .failure(named))
                rank = !name.sealed ? 0 : name.name == id.rawValue ? 1 : 2
            }
            guard let id = entry.nodeID, chosen[id].map({ $0.rank < rank }) ?? true else { continue }
            chosen[id] = (entry, rank)
        }
        return RecordListing(entries: chosen.values.map(\.entry).sorted { $0.nodeID!.rawValue < $1.nodeID!.rawValue } + unknown)
    }

    /// A record under a node's ID listed beside the node's keyed record (which the listing chose): what it
    /// holds (nil: it does not open), read `If-Match` its listed object, and the keyed record's generation.
    struct RecordBesideKeyed {
        let object: ObjectInfo
        let nodeID: NodeID
        let held: RecordObject?
        let keyedGeneration: UInt64

        /// Whether the keyed record replaced it (`CloudSync.isReplaced`): else it is a change made there while
        /// the node moved, which the keyed record shadows.
        var isReplaced: Bool { CloudSync.isReplaced(held, byGeneration: keyedGeneration) }
    }

    /// The sealed records under node IDs among `objects` that this listing did not choose because their node
    /// has a keyed record that opened; gone since the listing: left out.
    func recordsBesideKeyed(in objects: [ObjectInfo], remote: any Remote, with manager: DiskManager) async throws(RemoteError) -> [RecordBesideKeyed] {
        var keyedGenerations: [NodeID: UInt64] = [:]
        for entry in entries {
            if case .success(let opened) = entry.opened, opened.keyedNames { keyedGenerations[opened.nodeID] = opened.object.generation }
        }
        let chosen = Set(entries.map(\.key))
        var beside: [RecordBesideKeyed] = []
        for object in objects where !chosen.contains(object.key) {
            guard let name = CloudLayout.recordName(ofKey: object.key), name.sealed, let id = try? NodeID(name.name), name.name == id.rawValue,
                  let keyed = keyedGenerations[id] else { continue }
            let data: Data
            do { data = try await remote.read(object.key, range: 0..<object.size, ifMatch: object.etag) } catch {
                guard error.code == .changed || error.code == .notFound else { throw error }
                continue
            }
            let held = try? RecordObject.read(data, key: object.key, expected: id, with: manager).object
            beside.append(RecordBesideKeyed(object: object, nodeID: id, held: held, keyedGeneration: keyed))
        }
        return beside
    }
}
