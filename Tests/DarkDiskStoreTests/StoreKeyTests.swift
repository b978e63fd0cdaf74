import DarkDiskStore
import Foundation
import Testing

@Suite struct StoreKeyTests {
    @Test func createAndReopen() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        try manager.importNodeFile(DiskImport(cleartextData: Data("hello".utf8)), nodeID: NodeID("n1"))
        let attributes = try FileManager.default.attributesOfItem(atPath: store.location.keyPath)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)

        let reopened = try store.open()
        let export = try #require(try reopened.files.nodeFile(NodeID("n1")))
        #expect(try decrypt(export) == Data("hello".utf8))
    }

    @Test func createTwiceFails() throws {
        let store = try TemporaryStore()
        _ = try store.create()
        #expect(throws: DarkDiskError.self) { try store.create() }
        do { _ = try store.create() } catch let error as DarkDiskError { #expect(error.code == .storeExists) }
    }

    @Test func missingStoreIsAClearError() throws {
        let store = try TemporaryStore()
        do {
            _ = try store.open()
            Issue.record("opened a store that does not exist")
        } catch let error as DarkDiskError {
            #expect(error.code == .storeNotFound)
            #expect(error.message.contains(store.location.configDirectory), "names where it looked")
            #expect(!error.message.contains("darkdisk "), "the library speaks its own terms; the CLI adds 'run darkdisk init'")
        }
    }

    @Test func keyFileReadableByOthersIsRefused() throws {
        let store = try TemporaryStore()
        _ = try store.create()
        chmod(store.location.keyPath, 0o644)
        do {
            _ = try store.open()
            Issue.record("accepted a world-readable key file")
        } catch let error as DarkDiskError {
            #expect(error.code == .keyFile)
            #expect(error.message.contains("chmod 600"))
        }
        chmod(store.location.keyPath, 0o600)
        _ = try store.open()
    }

    @Test func symlinkedKeyFileIsRefused() throws {
        let store = try TemporaryStore()
        _ = try store.create()
        let moved = store.directory + "/elsewhere.key"
        try FileManager.default.moveItem(atPath: store.location.keyPath, toPath: moved)
        try FileManager.default.createSymbolicLink(atPath: store.location.keyPath, withDestinationPath: moved)
        #expect(throws: DarkDiskError.self) { try store.open() }
    }

    @Test func passphraseProtectedKey() throws {
        let store = try TemporaryStore()
        let manager = try store.create(passphrase: "correct horse")
        try manager.importNodeFile(DiskImport(cleartextData: Data("secret".utf8)), nodeID: NodeID("n"))
        let text = try String(contentsOfFile: store.location.keyPath, encoding: .utf8)
        #expect(text.contains("scrypt"))

        do { _ = try store.open(); Issue.record("opened without a passphrase") } catch let error as DarkDiskError {
            #expect(error.code == .passphraseRequired)
        }
        do { _ = try store.open(passphrase: "wrong horse"); Issue.record("opened with a wrong passphrase") } catch let error as DarkDiskError {
            #expect(error.code == .wrongPassphrase)
        }
        let reopened = try store.open(passphrase: "correct horse")
        #expect(try decrypt(try #require(try reopened.files.nodeFile(NodeID("n")))) == Data("secret".utf8))
    }

    @Test func corruptKeyFileIsAClearError() throws {
        let store = try TemporaryStore()
        _ = try store.create()
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: store.location.keyPath))
        chmod(store.location.keyPath, 0o600)
        do { _ = try store.open(); Issue.record("accepted garbage") } catch let error as DarkDiskError {
            #expect(error.code == .keyFile)
        }
    }
}

@Suite struct StoreLocationTests {
    @Test func xdgFoldersAndOverrides() {
        let env = ["HOME": "/home/u", "XDG_DATA_HOME": "/d", "XDG_CACHE_HOME": "relative/ignored"]
        let xdg = StoreLocation.resolve(store: nil, environment: env)
        #expect(xdg.dataDirectory == "/d/darkdisk/default")
        #expect(xdg.cacheDirectory == "/home/u/.cache/darkdisk/default", "a relative XDG value is ignored, as the spec says")
        #expect(xdg.configDirectory == "/home/u/.config/darkdisk/default")
        #expect(xdg.keyPath == "/home/u/.config/darkdisk/default/master.key")

        let fromEnv = StoreLocation.resolve(store: nil, environment: env.merging(["DARKDISK_STORE": "/s"]) { $1 })
        #expect(fromEnv.dataDirectory == "/s/data" && fromEnv.cacheDirectory == "/s/cache" && fromEnv.configDirectory == "/s/config")
        let fromFlag = StoreLocation.resolve(store: "/flag", environment: env.merging(["DARKDISK_STORE": "/s"]) { $1 })
        #expect(fromFlag.dataDirectory == "/flag/data", "--store wins over DARKDISK_STORE")
    }
}
