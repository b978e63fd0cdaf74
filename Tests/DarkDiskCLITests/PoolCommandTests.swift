import DarkDiskStore
import DarkDiskTestTraits
import Foundation
import Testing

@Suite(.processSlots) struct PoolCommandTests {
    func poolStatus(_ store: CLIStore, _ pool: String) throws -> [String: Any] {
        let run = try store.darkdisk(["status", "--json"])
        let json = try JSONSerialization.jsonObject(with: run.stdout) as! [String: Any]
        return (json["pools"] as! [[String: Any]]).first { $0["name"] as? String == pool }!
    }

    @Test func configGetSetList() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["init"]).status == 0)
        await #expect(try store.darkdisk(["config", "get", "pool.data.max_size"]).output == "26214400\n")
        await #expect(try store.darkdisk(["config", "get", "pool.avatars.default_expiration"]).output == "604800\n")
        await #expect(try store.darkdisk(["config", "set", "pool.thumbnails.max_size", "2MiB"]).status == 0)
        await #expect(try store.darkdisk(["config", "get", "pool.thumbnails.max_size"]).output == "2097152\n")
        await #expect(try store.darkdisk(["config", "set", "pool.data.default_expiration", "3600"]).status == 0)
        await #expect(try store.darkdisk(["config", "set", "cache.min_free_percent", "5"]).status == 0)
        let list = try await store.darkdisk(["config", "list"]).output
        #expect(list.contains("pool.thumbnails.max_size 2097152\n"))
        #expect(list.contains("pool.data.default_expiration 3600\n"))
        #expect(list.contains("cache.min_free_percent 5\n"))
        #expect((try poolStatus(store, "thumbnails")["maxSize"] as? Int) == 2_097_152)

        // Settings live in the index: purging the cache folder does not reset them.
        await #expect(try store.darkdisk(["import", "-", "--node", "c"], stdin: Data("c".utf8)).status == 0)
        try FileManager.default.removeItem(atPath: store.storePath + "/cache")
        await #expect(try store.darkdisk(["config", "get", "pool.thumbnails.max_size"]).output == "2097152\n")

        await expectOneLineFailure(try store.darkdisk(["config", "get", "pool.data.colour"]), mentioning: "unknown setting")
        await expectOneLineFailure(try store.darkdisk(["config", "set", "pool.data.max_size", "lots"]), mentioning: "invalid size")
        await expectOneLineFailure(try store.darkdisk(["config", "set", "pool.data.max_size", "5X"]), mentioning: "invalid size")
        await expectOneLineFailure(try store.darkdisk(["config", "set", "pool.data.max_size", "99999999999G"]), mentioning: "invalid size")
        await expectOneLineFailure(try store.darkdisk(["config", "set", "pool.data.default_expiration", "1.5"]), mentioning: "whole seconds")
        await expectOneLineFailure(try store.darkdisk(["config", "set", "cache.min_free_percent", "95"]), mentioning: "0 to 90")
    }

    @Test func shrinkingThePoolEvictsLeastRecentlyUsed() async throws {
        let store = try CLIStore()
        for i in 0..<6 {
            await #expect(try store.darkdisk(["import", "-", "--node", "n\(i)"], stdin: CLIStore.bytes(100_000, seed: UInt64(i))).status == 0)
        }
        await #expect(try store.darkdisk(["import", "-", "--node", "kept", "--persistent"], stdin: CLIStore.bytes(100_000)).status == 0)
        // Touch the oldest: it becomes the most recently used.
        await #expect(try store.darkdisk(["export", "--node", "n0"]).status == 0)
        await #expect(try store.darkdisk(["config", "set", "pool.data.max_size", "250K"]).status == 0)
        let data = try poolStatus(store, "data")
        #expect((data["cachedSize"] as! Int) <= 250 * 1024)
        await #expect(try store.darkdisk(["export", "--node", "n0"]).status == 0, "the touched file survives")
        await #expect(try store.darkdisk(["export", "--node", "n1"]).status != 0, "the least recently used goes first")
        await #expect(try store.darkdisk(["export", "--node", "kept"]).status == 0, "persistent files are never evicted")
    }

    @Test func persistAndDelete() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["import", "-", "--node", "n"], stdin: Data("node".utf8)).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--node", "n", "--kind", "thumbnail"], stdin: Data("t".utf8)).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--user", "u", "--identity", "a"], stdin: Data("a".utf8)).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--user", "u", "--identity", "b"], stdin: Data("b".utf8)).status == 0)

        await #expect(try store.darkdisk(["persist", "--node", "n", "on"]).status == 0)
        #expect((try poolStatus(store, "data")["persistentSize"] as! Int) > 0)
        #expect((try poolStatus(store, "data")["cachedSize"] as! Int) == 0)
        await #expect(try store.darkdisk(["persist", "--node", "n", "off"]).status == 0)
        #expect((try poolStatus(store, "data")["persistentSize"] as! Int) == 0)
        await #expect(try store.darkdisk(["persist", "--user", "u", "on"]).status == 0)
        #expect((try poolStatus(store, "avatars")["cachedSize"] as! Int) == 0)
        await #expect(try store.darkdisk(["export", "--node", "n"]).output == "node")

        await #expect(try store.darkdisk(["delete", "--node", "n", "--kind", "thumbnail"]).status == 0)
        await #expect(try store.darkdisk(["export", "--node", "n", "--kind", "thumbnail"]).status != 0)
        await #expect(try store.darkdisk(["export", "--node", "n"]).output == "node")
        await #expect(try store.darkdisk(["delete", "--node", "n"]).status == 0)
        await #expect(try store.darkdisk(["export", "--node", "n"]).status != 0)
        await #expect(try store.darkdisk(["delete", "--user", "u", "--identity", "a"]).status == 0)
        #expect((try poolStatus(store, "avatars")["files"] as! Int) == 1)
        await #expect(try store.darkdisk(["delete", "--user", "u"]).status == 0)
        #expect((try poolStatus(store, "avatars")["files"] as! Int) == 0)

        await expectOneLineFailure(try store.darkdisk(["delete", "--node", "n"]), mentioning: "nothing stored")
        await expectOneLineFailure(try store.darkdisk(["delete"]), mentioning: "--node")
        await expectOneLineFailure(try store.darkdisk(["delete", "--node", "../n"]), mentioning: "invalid node ID")
        await expectOneLineFailure(try store.darkdisk(["persist", "--node", "n", "maybe"]), mentioning: "'on' or 'off'")
        await expectOneLineFailure(try store.darkdisk(["persist", "--node", "gone", "on"]), mentioning: "no data stored")
        await expectOneLineFailure(try store.darkdisk(["persist", "--user", "nobody", "on"]), mentioning: "no avatar")
    }

    @Test func importFlags() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["import", "-", "--node", "e", "--expiration", "1"], stdin: Data("e".utf8)).status == 0)
        await #expect(try store.darkdisk(["import", "-", "--node", "m", "--migrate-after-upload"], stdin: Data("m".utf8)).status == 0)
        #expect((try poolStatus(store, "data")["persistentSize"] as! Int) > 0, "migrate-after-upload keeps the file persistent until uploaded")
        try? await Task.sleep(nanoseconds: UInt64((1.2) * 1e9))
        await expectOneLineFailure(try store.darkdisk(["export", "--node", "e"]), mentioning: "no data stored")
        await expectOneLineFailure(try store.darkdisk(["import", "-", "--node", "x", "--expiration", "soon"], stdin: Data()), mentioning: "expiration")
    }
}
