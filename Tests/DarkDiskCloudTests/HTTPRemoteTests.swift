import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// The http remote against a real nginx serving the bucket a file remote writes.
@Suite(.ownThreads) struct HTTPRemoteTests {
    @Test func pushToTheBucketPullAndReadOverHTTP() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(5_000_000, seed: 21)
        try await CloudSync(manager: setup.a, remote: setup.remote).push(dataFile: setup.file("d", data), nodeID: NodeID("web"), name: "web.bin")
        try await CloudSync(manager: setup.a, remote: setup.remote).push(dataFile: setup.file("s", Data("small".utf8)), nodeID: NodeID("small"))
        let nginx = try Nginx(root: setup.remote.root)
        let http = try RemoteURL.remote(nginx.url + "/")

        let result = try await CloudSync(manager: setup.b, remote: http).pull()
        #expect(result.added == 2)
        let downloads = DownloadManager(manager: setup.b, remote: http, partSize: 1 << 20, parallelParts: 3)
        let export = try await downloads.nodeData(NodeID("web"))
        #expect(try CloudTests().plaintext(export) == data)
        let object = try setup.cloudKey(NodeID("web"))
        #expect(nginx.requests(for: object) == 5, "a 5 MB cloud file in 1 MiB parts: \(nginx.requests(for: object)) GETs")
    }

    @Test func coalescingMakesOneTransferAtTheServer() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(300_000, seed: 22)
        try await CloudSync(manager: setup.a, remote: setup.remote).push(dataFile: setup.file("d", data), nodeID: NodeID("hot"))
        let nginx = try Nginx(root: setup.remote.root)
        let http = try RemoteURL.remote(nginx.url)
        _ = try await CloudSync(manager: setup.b, remote: http).pull()
        let downloads = DownloadManager(manager: setup.b, remote: http)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    let plaintext = try CloudTests().plaintext(try await downloads.nodeData(NodeID("hot")))
                    #expect(plaintext == data)
                }
            }
            try await group.waitForAll()
        }
        #expect(nginx.requests(for: try setup.cloudKey(NodeID("hot"))) == 1)
    }

    @Test func errorsAreTyped() async throws {
        let setup = try CloudTests.Setup()
        let nginx = try Nginx(root: setup.remote.root)
        let http = try RemoteURL.remote(nginx.url)
        #expect(try await http.info("nodes/missing.ddc") == nil)
        await #expect(throws: RemoteError.self) { _ = try await http.read("nodes/missing.ddc", range: 0..<1, ifMatch: nil) }
        do {
            _ = try await http.write("x", data: Data())
            Issue.record("an http remote accepted a write")
        } catch { #expect(error.message.contains("read-only")) }
        // A changed object: If-Match fails with 412.
        _ = try await setup.remote.write("obj", data: Data("version one".utf8))
        let info = try #require(try await http.info("obj"))
        // Another length: nginx's ETag (mtime and length) changes even within the same second.
        _ = try await setup.remote.write("obj", data: Data("version two!".utf8))
        do {
            _ = try await http.read("obj", range: 0..<4, ifMatch: info.etag)
            Issue.record("a read of a changed object succeeded")
        } catch { #expect(error.code == .changed) }
        // Nobody listening: unreachable, after retries.
        let closed = HTTPRemote(url: "http://127.0.0.1:\(try Nginx.freePort())", timeout: .seconds(1), attempts: 2)
        do {
            _ = try await closed.info("obj")
            Issue.record("a closed port answered")
        } catch { #expect(error.code == .unreachable) }
    }
}
