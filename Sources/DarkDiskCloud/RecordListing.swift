import DarkDisk
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
}
