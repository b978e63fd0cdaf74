import DarkDiskStore
import Foundation
import Testing

private extension PoolSettings {
    var pair: (UInt64, Double) { (maxSize, defaultExpiration) }
}

/// Pool settings and the free-space floor persist across restarts and a purge of the
/// cache folder; invalid values are refused with `.invalidArgument`.
@Suite struct SettingsTests {
    @Test func freshStoreHasTheDocumentedDefaults() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        #expect(try manager.files.settings(for: .data).pair == (25 * 1024 * 1024, 0))
        #expect(try manager.files.settings(for: .thumbnails).pair == (5 * 1024 * 1024, 0))
        #expect(try manager.files.settings(for: .avatars).pair == (5 * 1024 * 1024, 7 * 24 * 3600))
        #expect(try manager.files.minimumFreeFraction() == 0.10)
    }

    @Test func settingsPersistAcrossRestartsAndACachePurge() throws {
        let store = try TemporaryStore()
        do {
            let manager = try store.create()
            try manager.files.setMaxSize(123_456, for: .thumbnails)
            try manager.files.setMaxSize(7_654_321, for: .data)
            try manager.files.setDefaultExpiration(77, for: .avatars)
            try manager.files.setDefaultExpiration(-1, for: .data)
            try manager.files.setMinimumFreeFraction(0.05)
            try importFile(manager, "n")
            try FileManager.default.removeItem(atPath: store.location.cacheDirectory)
            #expect(try manager.files.settings(for: .thumbnails).maxSize == 123_456, "a purge of the cache folder keeps settings")
            try importFile(manager, "again") // the cache folder is back
        }
        try FileManager.default.removeItem(atPath: store.location.cacheDirectory)
        let reopened = try store.open()
        #expect(try reopened.files.settings(for: .thumbnails).pair == (123_456, 0))
        #expect(try reopened.files.settings(for: .data).pair == (7_654_321, -1))
        #expect(try reopened.files.settings(for: .avatars).pair == (5 * 1024 * 1024, 77))
        #expect(try reopened.files.minimumFreeFraction() == 0.05)
        let status = try reopened.files.status()
        #expect(status.map(\.settings.maxSize) == [7_654_321, 123_456, 5 * 1024 * 1024])
        // And a third instance, after another purge while nothing is open.
        try importFile(reopened, "once-more")
        try FileManager.default.removeItem(atPath: store.location.cacheDirectory)
        #expect(try store.open().files.settings(for: .thumbnails).maxSize == 123_456)
    }

    @Test(arguments: [0.95, 0.9000001, -0.1, -1, Double.nan, Double.infinity])
    func invalidFreeSpaceFloorIsRefused(fraction: Double) throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        try manager.files.setMinimumFreeFraction(0.2)
        do {
            try manager.files.setMinimumFreeFraction(fraction)
            Issue.record("accepted a free-space floor of \(fraction)")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(!error.message.isEmpty && !error.message.contains("\n"))
        }
        #expect(try manager.files.minimumFreeFraction() == 0.2, "a refused value changes nothing")
    }

    @Test func freeSpaceFloorBoundsAreAccepted() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        try manager.files.setMinimumFreeFraction(0.9)
        #expect(try manager.files.minimumFreeFraction() == 0.9)
        try manager.files.setMinimumFreeFraction(0)
        #expect(try manager.files.minimumFreeFraction() == 0)
        #expect(try manager.files.enforceFreeSpace() == 0, "a floor of 0 is off")
    }

    @Test func invalidPoolSettingsAreRefused() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        for bad in [UInt64.max, UInt64(Int64.max) + 1] {
            #expect { try manager.files.setMaxSize(bad, for: .data) } throws: { ($0 as? DarkDiskError)?.code == .invalidArgument }
        }
        for bad in [Double.nan, Double.infinity, -Double.infinity] {
            #expect { try manager.files.setDefaultExpiration(bad, for: .data) } throws: { ($0 as? DarkDiskError)?.code == .invalidArgument }
        }
        #expect(try manager.files.settings(for: .data).pair == (25 * 1024 * 1024, 0))
    }

    @Test func maxZeroKeepsNoCacheFiles() async throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        try manager.files.setMaxSize(0, for: .data)
        #expect { try importFile(manager, "c") } throws: { ($0 as? DarkDiskError)?.code == .tooLarge }
        try importFile(manager, "p", persistent: true)
        #expect(try !manager.files.hasNodeFile(NodeID("c")), "a pool with max 0 takes no cache file")
        #expect(try poolStatus(manager, .data).cachedSize == 0)
        #expect(try manager.files.hasNodeFile(NodeID("p")), "persistent files are kept")
    }
}
