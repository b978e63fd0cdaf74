import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// A file remote wrote cloud files 0600 but records and the wrapped key 0644 (other
/// users of the machine could read names and the wrapped key), and a server answering 403 for them was
/// reported as "not in the remote".
@Suite(.processSlots) struct RemoteAccessTests {
    /// Modes of every entry of `type` (files, or folders) under `folder`, by path (its temporary folder aside).
    static func modes(under folder: String, of type: FileAttributeType = .typeRegular) throws -> [String: Int] {
        var result: [String: Int] = [:]
        for path in FileManager.default.enumerator(atPath: folder)?.compactMap({ $0 as? String }) ?? [] where !path.hasPrefix(".tmp") {
            let attributes = try FileManager.default.attributesOfItem(atPath: folder + "/" + path)
            guard attributes[.type] as? FileAttributeType == type else { continue }
            result[path] = (attributes[.posixPermissions] as? NSNumber)?.intValue
        }
        return result
    }

    /// Objects and the folders holding them: the user's only (0600, 0700), or readable by all with `?shared=1`.
    @Test func everyObjectOfAFileRemoteHasOneMode() async throws {
        for (query, mode) in [("", 0o600), ("?shared=1", 0o644)] {
            let store = try CLIStore()
            let bucket = store.directory + "/bucket"
            try FileManager.default.createDirectory(atPath: bucket, withIntermediateDirectories: true)
            let passphrase = try store.file("pass", Data("modes of objects\n".utf8))
            await #expect(try store.darkdisk(["init", "--remote", "file://" + bucket + query, "--passphrase-file", passphrase, "--scrypt-log-n", "10"]).status == 0)
            await #expect(try store.darkdisk(["push", try store.file("n", CLIStore.bytes(3000)), "--node", "n", "--name", "secret plans.txt",
                                        "--passphrase-file", passphrase]).status == 0)
            await #expect(try store.darkdisk(["push", try store.file("a", CLIStore.bytes(300)), "--user", "u", "--identity", "i",
                                        "--passphrase-file", passphrase]).status == 0)
            let modes = try Self.modes(under: bucket)
            let name = try store.objectName("n", passphrase: passphrase)
            #expect(Set(modes.keys).isSuperset(of: ["keys/master.json", "records/\(name).rec"]) && modes.keys.contains { $0.hasPrefix("nodes/\(name)/") }
                    && modes.keys.contains { $0.hasPrefix("users/") && $0.hasSuffix(".rec") } && modes.keys.contains { $0.hasPrefix("avatars/") },
                    "\(modes.keys)")
            #expect(modes.values.allSatisfy { $0 == mode }, "file://\(query): \(modes.mapValues { String($0, radix: 8) })")
            let folders = try Self.modes(under: bucket, of: .typeDirectory)
            #expect(!folders.isEmpty && folders.values.allSatisfy { $0 == mode | (mode & 0o444) >> 2 }, "file://\(query): \(folders.mapValues { String($0, radix: 8) })")
        }
        let store = try CLIStore()
        await expectOneLineFailure(try store.darkdisk(["init", "--remote", "file:///tmp/x?public=yes"]), mentioning: "shared=1")
    }

    @Test func aServerThatAnswers403IsAccessDeniedNotMissing() async throws {
        let remote = try RemoteBucket()
        try remote.push("n", CLIStore.bytes(3000, seed: 8))
        let proxy = try FaultProxy(servingRoot: remote.bucket)
        defer { withExtendedLifetime(proxy) {} }
        try remote.join(proxy.url)
        try proxy.control(["fail": ["status": 403, "count": 1_000_000, "path": "/nodes/\(try remote.objectName("n"))/"]])
        let fetch = try remote.darkdiskB(["fetch", "--node", "n"])
        expectOneLineFailure(fetch, mentioning: "access denied (403)")
        #expect(!fetch.stderr.contains("not in"), "\(fetch.stderr)")
        try proxy.control(["clear": true, "fail": ["status": 403, "count": 1_000_000, "path": "/records/"]])
        expectOneLineFailure(try remote.darkdiskB(["pull"]), mentioning: "access denied (403)")
        let mount = try remote.mountB()
        try proxy.control(["clear": true, "fail": ["status": 403, "count": 1_000_000, "path": "/nodes/\(try remote.objectName("n"))/"]])
        let cat = try Shell.sh("exec timeout -s KILL 60 cat \(Shell.quote(mount.path + "/nodes/n/data"))", timeout: 90)
        #expect(cat.status != 0 && cat.stderr.contains("Permission denied"), "cat of a node the server refuses: \(cat.stderr)")
    }
}
