import DarkDiskStore
import DarkDiskCloud
import DarkDiskTestSupport
import Foundation
import Testing

/// What `init --remote` and `remote set` do is public API: an app creates a store that
/// joins another machine's key through the remote with a passphrase, and attaches a remote, with the same
/// refusals as the command line, as typed errors.
@Suite struct StoreRemoteTests {
    @Test func aSecondStoreJoinsThroughTheRemoteAndForeignRemotesAreRefused() async throws {
        let directory = NSTemporaryDirectory() + "darkdisk-storeremote-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/bucket", withIntermediateDirectories: true)
        let url = "file://" + directory + "/bucket"
        let passphrase = Array("correct horse".utf8)

        let (first, joinedFirst) = try await StoreRemote.createStore(at: StoreLocation(directory: directory + "/a"), remote: url, passphrase: passphrase, passphraseCost: .weakest)
        #expect(!joinedFirst)
        #expect(try StoreRemote.url(for: first) == (url, false))
        try await CloudSync(manager: first, remote: try StoreRemote.remote(for: first))
            .push(dataFile: { let p = directory + "/plain"; try Data("shared".utf8).write(to: URL(fileURLWithPath: p)); return p }(), nodeID: NodeID("n"))

        let (second, joined) = try await StoreRemote.createStore(at: StoreLocation(directory: directory + "/b"), remote: url, passphrase: passphrase, passphraseCost: .weakest)
        #expect(joined)
        _ = try await CloudSync(manager: second, remote: try StoreRemote.remote(for: second)).pull()
        let downloads = DownloadManager(manager: second, remote: try StoreRemote.remote(for: second))
        #expect(try CloudTests().plaintext(try await downloads.nodeData(NodeID("n"))) == Data("shared".utf8))

        // A wrong passphrase cannot join; a store with its own key cannot attach; nor can one join without a passphrase.
        await #expect(throws: (any Error).self) {
            _ = try await StoreRemote.createStore(at: StoreLocation(directory: directory + "/c"), remote: url, passphrase: Array("wrong passphrase".utf8))
        }
        do {
            _ = try await StoreRemote.createStore(at: StoreLocation(directory: directory + "/d"), remote: url, passphrase: nil)
            Issue.record("a store without a passphrase joined a remote with a protected key")
        } catch let error as DarkDiskError {
            #expect(error.code == .passphraseRequired, "\(error)")
        }
        let other = try DiskManager.create(at: StoreLocation(directory: directory + "/e"), passphrase: Array("other passphrase".utf8), passphraseCost: .weakest)
        do {
            try await StoreRemote.attach(other, to: url, passphrase: Array("other passphrase".utf8))
            Issue.record("a store attached to a remote holding another store's key")
        } catch let error as RemoteError {
            #expect(error.code == .foreignKey, "\(error)")
        }
        #expect(try StoreRemote.url(for: other).isDefault)
    }
}
