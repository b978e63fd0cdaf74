import DarkDiskStore
import DarkDiskCloud
@testable import DarkDiskImages
import DarkDiskTestSupport
import Foundation
import Synchronization
import Testing

/// The image manager over a real store and a real file remote: the seeds' fetch contract, negative
/// results, coalescing, flushes.
// The limit catches a hang, not slowness: under ThreadSanitizer, with the whole suite sharing two cores,
// these async tests waited over two minutes for a thread of the cooperative pool.
@Suite(.timeLimit(.minutes(10))) struct ImageManagerTests {
    let resize64 = ImageProcessor.resize(toFit: try! ImageSize(width: 64, height: 64))

    @Test func preFetchThenLoadProcessCacheAndPostFetch() async throws {
        let setup = try ImageSetup()
        let node = try await setup.push("photo", thumbnail: try TestImages.jpeg(400, 300))
        let images = setup.images()
        let record = FetchRecord()
        let caller = pthread_self()
        let processedOnCaller = Atomic<Bool>(true)
        let processor = ImageProcessor(identifier: "resize-64x64") { image in
            processedOnCaller.store(pthread_equal(pthread_self(), caller) != 0, ordering: .relaxed)
            record.log("process")
            return try image.resized(toFit: ImageSize(width: 64, height: 64))
        }
        let ticket = images.fetchNodeThumbnail(node, processor: processor, preFetch: { image, willFetch in
            record.log("pre \(image == nil) \(willFetch)")
        }, postFetch: record.postFetch)
        record.log("returned")
        #expect(ticket != nil, "the thumbnail is only in the remote: a download")
        let post = try #require(await record.posts(1).first)
        #expect(record.events.withLock { $0 } == ["pre true true", "returned", "process", "post"])
        let onCaller = processedOnCaller.load(ordering: .relaxed)
        #expect(!onCaller, "processing runs off the caller's thread")
        #expect(post.onCallbackQueue, "postFetch runs on the callback queue")
        #expect(post.error == nil && post.image?.width == 64 && post.image?.height == 48)
        await #expect(try setup.b.files.nodeFile(node, kind: .thumbnail) != nil, "the download was cached in the DiskManager")
        let readsAfterFirst = setup.counting.reads.load(ordering: .relaxed)

        // A memory hit: preFetch gets the image at once and nothing else happens.
        let again = images.fetchNodeThumbnail(node, processor: processor, preFetch: { image, willFetch in
            #expect(image == post.image && !willFetch)
            record.log("hit")
        }, postFetch: record.postFetch)
        #expect(again == nil)
        #expect(try await images.nodeThumbnail(node, processor: processor) == post.image, "the async form hits too")
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(record.postCount == 1 && record.events.withLock { $0.last } == "hit")
        #expect(setup.counting.reads.load(ordering: .relaxed) == readsAfterFirst)

        // Another processor is another key; the original comes from the DiskManager now, not the remote.
        let original = try #require(try await images.nodeThumbnail(node))
        #expect(original.width == 400 && original.format == .jpeg)
        #expect(setup.counting.reads.load(ordering: .relaxed) == readsAfterFirst)
        #expect(images.nodeThumbnailsCache.keys.count == 2)
    }

    @Test func fetchReturnsTheTicketOfTheDownloadItNeeds() async throws {
        let setup = try ImageSetup()
        let node = try await setup.push("remote-only", thumbnail: try TestImages.jpeg(200, 100))
        let images = setup.images()
        let record = FetchRecord()
        let readsBefore = setup.counting.reads.load(ordering: .relaxed)
        setup.counting.delay.store(100_000, ordering: .relaxed)  // slow reads: the second fetch joins the first
        let ticket = try #require(images.fetchNodeThumbnail(node, processor: resize64, preFetch: { _, willFetch in
            #expect(willFetch)
        }, postFetch: record.postFetch), "only in the remote: the fetch returns the download's ticket")
        // An identical fetch in flight gets a ticket of the same transfer, and shares the load.
        let joined = try #require(images.fetchNodeThumbnail(node, processor: resize64, preFetch: { _, _ in }, postFetch: record.postFetch))
        let posts = await record.posts(2)
        #expect(posts.allSatisfy { $0.error == nil && $0.image?.width == 64 && $0.image?.height == 32 })
        let download = try await ticket.value
        let thumbnail = try #require(download.thumbnail)
        #expect(try ProcessedImage(data: thumbnail).width == 200, "postFetch's image came from the ticket's transfer")
        #expect(ticket.progress.totalBytes > 0 && ticket.progress.completedBytes == ticket.progress.totalBytes)
        #expect(try await joined.value.thumbnail == thumbnail)
        #expect(setup.counting.reads.load(ordering: .relaxed) - readsBefore == 2, "one transfer: the header and the thumbnail section")
        await #expect(try setup.b.files.nodeFile(node, kind: .thumbnail) != nil)

        // A memory hit needs no download.
        var hit = false
        #expect(images.fetchNodeThumbnail(node, processor: resize64, preFetch: { image, willFetch in hit = image != nil && !willFetch },
                                          postFetch: record.postFetch) == nil)
        #expect(hit)
        // Nor does a thumbnail stored locally (another key, so not in memory): the image comes from the disk.
        let local = FetchRecord()
        var willFetch = false
        let none = images.fetchNodeThumbnail(node, preFetch: { _, will in willFetch = will }, postFetch: local.postFetch)
        #expect(none == nil && willFetch)
        let original = try #require(await local.posts(1).first)
        #expect(original.error == nil && original.image?.width == 200)
        #expect(setup.counting.reads.load(ordering: .relaxed) - readsBefore == 2)
        #expect(record.postCount == 2)
    }

    @Test func postFetchRunsOnTheMainQueueByDefault() async throws {
        let setup = try ImageSetup()
        let images = ImageManager(diskManager: setup.b)
        let node = try NodeID("main")
        _ = try await setup.b.importNodeFile(DiskImport(cleartextData: try TestImages.png(40, 40)), nodeID: node, kind: .thumbnail)
        let mainKey = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: mainKey, value: true)
        let onMain = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            images.fetchNodeThumbnail(node, preFetch: { _, _ in }, postFetch: { image, _ in
                continuation.resume(returning: DispatchQueue.getSpecific(key: mainKey) == true && image?.width == 40)
            })
        }
        #expect(onMain, "as in the seeds (the main thread): postFetch on the main queue")
    }

    @Test func negativeResultsAreCachedAndExpireButErrorsAreNot() async throws {
        let setup = try ImageSetup()
        let bare = try await setup.push("bare", thumbnail: nil)
        let user = try UserID("erin")
        try await CloudSync(manager: setup.a, remote: setup.remote).pushUserIdentity(user, identityID: IdentityID("mail|erin"), avatar: nil)
        let (clock, advance) = ExpiryClock.manual()
        let images = setup.images(clock: clock)

        #expect(try await images.nodeThumbnail(bare, processor: resize64) == nil, "the node has no thumbnail")
        var hit = false
        images.fetchNodeThumbnail(bare, processor: resize64, preFetch: { image, willFetch in hit = image == nil && !willFetch },
                                  postFetch: { _, _ in Issue.record("postFetch after a negative hit") })
        #expect(hit, "(nil, willFetch false): a remembered 'no thumbnail'")

        // The identity has no avatar: asked once, then remembered, then asked again after it expires.
        #expect(try await images.userAvatar(user) == nil)
        let reads = setup.counting.reads.load(ordering: .relaxed)
        #expect(try await images.userAvatar(user) == nil)
        #expect(setup.counting.reads.load(ordering: .relaxed) == reads, "no second lookup")
        // With a short lifetime, the remembered answer expires.
        images.negativeResultLifetime = .milliseconds(200)
        images.flushUserAvatarsCache(user)
        #expect(try await images.userAvatar(user) == nil)
        let readsBeforeExpiry = setup.counting.reads.load(ordering: .relaxed)
        advance(.milliseconds(199))
        var early = true
        images.fetchUserAvatar(user, preFetch: { _, will in early = !will }, postFetch: { _, _ in })
        #expect(early, "not expired 1 ms before its lifetime ends")
        advance(.milliseconds(2))
        var willFetch = false
        let record = FetchRecord()
        images.fetchUserAvatar(user, preFetch: { _, will in willFetch = will }, postFetch: record.postFetch)
        #expect(willFetch, "the negative result expired")
        let post = try #require(await record.posts(1).first)
        #expect(post.image == nil && post.error == nil)
        #expect(setup.counting.reads.load(ordering: .relaxed) > readsBeforeExpiry)

        // A transient error is reported, not remembered.
        let photo = try await setup.push("photo", thumbnail: try TestImages.png(120, 90))
        setup.counting.failing.store(true, ordering: .relaxed)
        do {
            _ = try await images.nodeThumbnail(photo, processor: resize64)
            Issue.record("a fetch from an unreachable remote succeeded")
        } catch { #expect(error.code == .download, "\(error)") }
        #expect(images.nodeThumbnailsCache.count == 1, "only the negative result of 'bare'")
        setup.counting.failing.store(false, ordering: .relaxed)
        #expect(try await images.nodeThumbnail(photo, processor: resize64)?.width == 64)
    }

    @Test func twentyIdenticalFetchesShareOneDownloadAndOneProcessingRun() async throws {
        let setup = try ImageSetup()
        let node = try await setup.push("shared", thumbnail: try TestImages.jpeg(800, 600))
        setup.counting.delay.store(100_000, ordering: .relaxed)
        let images = setup.images()
        let runs = Atomic<Int>(0)
        let processor = ImageProcessor(identifier: "counted-64") { image in
            runs.wrappingAdd(1, ordering: .relaxed)
            return try image.resized(toFit: ImageSize(width: 64, height: 64))
        }
        let record = FetchRecord()
        let willFetch = Atomic<Int>(0)
        for _ in 0..<10 {
            images.fetchNodeThumbnail(node, processor: processor, preFetch: { _, will in if will { willFetch.wrappingAdd(1, ordering: .relaxed) } },
                                      postFetch: record.postFetch)
        }
        let asyncResults = try await withThrowingTaskGroup(of: ProcessedImage?.self) { group in
            for _ in 0..<10 { group.addTask { try await images.nodeThumbnail(node, processor: processor) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let posts = await record.posts(10)
        #expect(willFetch.load(ordering: .relaxed) == 10)
        let results = posts.map(\.image) + asyncResults
        #expect(results.count == 20 && results.allSatisfy { $0 != nil && $0 == results[0] })
        #expect(runs.load(ordering: .relaxed) == 1, "one processing run: \(runs.load(ordering: .relaxed))")
        #expect(setup.counting.reads.load(ordering: .relaxed) == 2, "one download (header + thumbnail): \(setup.counting.reads.load(ordering: .relaxed)) reads")
    }

    @Test func aNilIdentifierIsNeitherCachedNorShared() async throws {
        let setup = try ImageSetup()
        let node = try await setup.push("n", thumbnail: try TestImages.png(100, 100))
        let images = setup.images()
        let runs = Atomic<Int>(0)
        let processor = ImageProcessor(identifier: nil) { image in
            runs.wrappingAdd(1, ordering: .relaxed)
            return try image.cropped(toFill: ImageSize(width: 10, height: 10))
        }
        #expect(try await images.nodeThumbnail(node, processor: processor)?.width == 10)
        var willFetch = false
        let record = FetchRecord()
        images.fetchNodeThumbnail(node, processor: processor, preFetch: { _, will in willFetch = will }, postFetch: record.postFetch)
        #expect(willFetch)
        #expect(await record.posts(1).first?.image?.height == 10)
        #expect(runs.load(ordering: .relaxed) == 2 && images.nodeThumbnailsCache.count == 0)
    }

    @Test func theCachesFollowTheDiskManager() async throws {
        let setup = try ImageSetup()
        let images = ImageManager(diskManager: setup.b, callbackQueue: setup.callbacks)  // local only
        let node = try NodeID("local")
        let key = ImageCacheKey(ownerID: "local", processorID: "resize-64x64")
        _ = try await setup.b.importNodeFile(DiskImport(cleartextData: try TestImages.png(200, 100)), nodeID: node, kind: .thumbnail)
        #expect(try await images.nodeThumbnail(node, processor: resize64)?.height == 32)
        #expect(images.nodeThumbnailsCache.contains(key))

        // A new thumbnail replaces the old one: the entry made from the old file goes.
        _ = try await setup.b.importNodeFile(DiskImport(cleartextData: try TestImages.png(100, 200)), nodeID: node, kind: .thumbnail)
        #expect(await eventually(within: 60) { !images.nodeThumbnailsCache.contains(key) }, "flushed on the DiskManager's change")
        #expect(try await images.nodeThumbnail(node, processor: resize64)?.width == 32)

        // Deleting the node drops its entries; it is a local-only node now without a thumbnail.
        _ = try await setup.b.importNodeFile(DiskImport(cleartextData: Data("data".utf8)), nodeID: node)
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(images.nodeThumbnailsCache.contains(key), "an import of another section leaves the thumbnail")
        await #expect(try setup.b.files.deleteNodeFile(node, kind: .thumbnail))
        #expect(await eventually(within: 60) { !images.nodeThumbnailsCache.contains(key) })
        #expect(try await images.nodeThumbnail(node, processor: resize64) == nil)

        // An avatar imported for an identity replaces what was cached for it (and a negative result).
        let user = try UserID("fay")
        let home = try IdentityID("home")
        _ = try await setup.b.importUserAvatar(DiskImport(cleartextData: try TestImages.jpeg(90, 90)), userID: user, identityID: home)
        #expect(try await images.userAvatar(user, identityID: home)?.width == 90)
        #expect(try await images.userAvatar(user)?.width == 90, "without a remote: the avatar stored most recently")
        _ = try await setup.b.importUserAvatar(DiskImport(cleartextData: try TestImages.jpeg(70, 70)), userID: user, identityID: home)
        #expect(await eventually(within: 60) { images.userAvatarsCache.count == 0 })
        #expect(try await images.userAvatar(user, identityID: home)?.width == 70)

        // Unknown here, and no remote: an error, not a negative result.
        let nowhere = try NodeID("nowhere")
        do {
            _ = try await images.nodeThumbnail(nowhere)
            Issue.record("an unknown node was found")
        } catch { #expect(error.code == .notAvailable) }
    }

    /// The seeds' fetch options per call. "Never download" gives what memory or the store
    /// has and otherwise fails at once without asking the remote; "refresh" asks the remote although the
    /// image is cached, and what it brings replaces the cached images.
    @Test func fetchOptionsNeverDownloadAndRefresh() async throws {
        let setup = try ImageSetup()
        let node = try await setup.push("photo", thumbnail: try TestImages.jpeg(400, 300))
        let images = setup.images()
        func reads() -> Int { setup.counting.reads.load(ordering: .relaxed) }

        do {
            _ = try await images.nodeThumbnail(node, options: .neverDownload, processor: resize64)
            Issue.record("a thumbnail only in the remote was found without downloading")
        } catch { #expect(error.code == .notAvailable && error.message.contains("may not download"), "\(error)") }
        let record = FetchRecord()
        let ticket = images.fetchNodeThumbnail(node, options: .neverDownload, processor: resize64,
                                               preFetch: { image, willFetch in record.log("pre \(image == nil) \(willFetch)") },
                                               postFetch: record.postFetch)
        #expect(ticket == nil, "no download, so no ticket")
        let post = try #require(await record.posts(1).first)
        #expect(post.image == nil && post.error?.code == .notAvailable)
        #expect(reads() == 0, "never download asked the remote")
        #expect(images.nodeThumbnailsCache.count == 0, "an error is not a negative result")

        // Downloaded once; then never-download is answered from memory, and from the store once memory is flushed.
        #expect(try await images.nodeThumbnail(node, processor: resize64)?.width == 64)
        let afterDownload = reads()
        #expect(try await images.nodeThumbnail(node, options: .neverDownload, processor: resize64)?.width == 64)
        images.flushNodeThumbnailCache(node)
        #expect(try await images.nodeThumbnail(node, options: .neverDownload, processor: resize64)?.width == 64)
        #expect(reads() == afterDownload)

        // Refresh: preFetch is told a fetch follows even though the image is cached, and the remote is asked.
        let refresh = FetchRecord()
        let refreshTicket = images.fetchNodeThumbnail(node, options: .refresh, processor: resize64,
                                                      preFetch: { image, willFetch in refresh.log("pre \(image == nil) \(willFetch)") },
                                                      postFetch: refresh.postFetch)
        #expect(refreshTicket != nil, "a refresh downloads")
        let refreshed = try #require(await refresh.posts(1).first)
        #expect(refresh.events.withLock { $0.first } == "pre true true")
        #expect(refreshed.error == nil && refreshed.image?.width == 64)
        #expect(reads() > afterDownload, "a refresh asked the remote")
        #expect(try await images.nodeThumbnail(node, processor: resize64) == refreshed.image, "the refreshed image is cached")

        // Avatars too.
        let user = try UserID("erin")
        let identity = try IdentityID("mail|erin")
        try await CloudSync(manager: setup.a, remote: setup.remote).pushUserIdentity(user, identityID: identity, avatar: try TestImages.png(90, 90))
        do {
            _ = try await images.userAvatar(user, identityID: identity, options: .neverDownload)
            Issue.record("an avatar only in the remote was found without downloading")
        } catch { #expect(error.code == .notAvailable) }
        #expect(try await images.userAvatar(user, identityID: identity)?.width == 90)
        let beforeRefresh = reads()
        #expect(try await images.userAvatar(user, identityID: identity, options: .refresh)?.width == 90)
        #expect(reads() > beforeRefresh)
        #expect(try await images.userAvatar(user, options: .neverDownload)?.width == 90, "without an identity: the most recently stored")
    }

    /// A thumbnail replaced by another process (the `darkdisk` CLI, as a mount daemon or a
    /// `pull` would) drops the processed images made from the old one in a long-running program.
    @Test func theCachesFollowOtherProcesses() async throws {
        let directory = NSTemporaryDirectory() + "darkdisk-images-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let manager = try DiskManager.create(at: StoreLocation(directory: directory))
        let images = ImageManager(diskManager: manager, callbackQueue: DispatchQueue(label: "darkdisk.tests.callbacks"))
        let node = try NodeID("shared")
        let key = ImageCacheKey(ownerID: "shared", processorID: "resize-64x64")
        _ = try await manager.importNodeFile(DiskImport(cleartextData: try TestImages.png(200, 100)), nodeID: node, kind: .thumbnail)
        #expect(try await images.nodeThumbnail(node, processor: resize64)?.height == 32)
        #expect(images.nodeThumbnailsCache.contains(key))

        let replacement = directory + "/replacement.png"
        try TestImages.png(100, 200).write(to: URL(fileURLWithPath: replacement))
        let pid = try ChildProcess.spawn(DarkDiskBinary.path, ["import", replacement, "--node", "shared", "--kind", "thumbnail", "--store", directory])
        #expect(await ChildProcess.exitStatus(pid) == 0)
        #expect(await eventually(within: 30) { !images.nodeThumbnailsCache.contains(key) }, "flushed on the other process' change")
        #expect(try await images.nodeThumbnail(node, processor: resize64)?.width == 32, "the new thumbnail, not the old one")
        withExtendedLifetime(manager) {}
    }

    /// A user the remote has no record of (the seeds' 404) has no avatar: a negative result,
    /// cached like the others, so the next fetch is a memory hit and asks the remote nothing.
    @Test func aUserWithoutARecordIsACachedNegativeResult() async throws {
        let setup = try ImageSetup()
        let images = setup.images()
        let ghost = try UserID("ghost")
        #expect(try await images.userAvatar(ghost) == nil, "no record: no avatar, not an error")
        let reads = setup.counting.reads.load(ordering: .relaxed)
        var hit = false
        let ticket = images.fetchUserAvatar(ghost, preFetch: { image, willFetch in hit = image == nil && !willFetch },
                                            postFetch: { _, _ in })
        #expect(ticket == nil && hit, "the negative result is cached")
        #expect(try await images.userAvatar(ghost) == nil)
        #expect(setup.counting.reads.load(ordering: .relaxed) == reads, "the remote is not asked again")
    }

    @Test func ownDownloadsDoNotFlushWhatTheyCached() async throws {
        let setup = try ImageSetup()
        let node = try await setup.push("cloudy", thumbnail: try TestImages.jpeg(300, 300))
        let images = setup.images()
        #expect(try await images.nodeThumbnail(node, processor: resize64) != nil)
        // The download's import into the DiskManager was announced; the entry made from that very file stays.
        try await Task.sleep(nanoseconds: 500_000_000)
        #expect(images.nodeThumbnailsCache.contains(ImageCacheKey(ownerID: "cloudy", processorID: "resize-64x64")))
    }

    @Test func avatarsByUserAndIdentity() async throws {
        let setup = try ImageSetup()
        let user = try UserID("gus")
        let work = try IdentityID("auth0|gus@example.com")
        let home = try IdentityID("github|7")
        let sync = CloudSync(manager: setup.a, remote: setup.remote)
        try await sync.pushUserIdentity(user, identityID: home, avatar: try TestImages.png(64, 64))
        try await sync.pushUserIdentity(user, identityID: work, avatar: try TestImages.jpeg(256, 200), display: true)
        let images = setup.images()
        let round = ImageProcessor.circle(diameter: 40)

        let shown = try #require(try await images.userAvatar(user, processor: round))
        #expect(shown.format == .png && shown.width == 40)
        #expect(try await images.userAvatar(user)?.width == 256, "the display identity by default")
        #expect(try await images.userAvatar(user, identityID: home)?.format == .png)
        #expect(try setup.b.files.storedAvatar(user, identityID: work) != nil && setup.b.files.storedAvatar(user, identityID: home) != nil)
        #expect(images.userAvatarsCache.count == 3)

        images.flushUserAvatarsCache(processorID: "circle-40")
        #expect(images.userAvatarsCache.count == 2)
        images.flushUserAvatarsCache(user)
        #expect(images.userAvatarsCache.count == 0)
        // The remote unreachable: the display identity is unknown, a stored avatar stands in for it.
        setup.counting.failing.store(true, ordering: .relaxed)
        #expect(try await images.userAvatar(user) != nil)
        #expect(images.userAvatarsCache.count == 0, "a stand-in is not cached")
        setup.counting.failing.store(false, ordering: .relaxed)

        // Thumbnail flushes by node and by processor touch only their own entries.
        let one = try await setup.push("one", thumbnail: try TestImages.png(50, 50))
        let two = try await setup.push("two", thumbnail: try TestImages.png(60, 60))
        for node in [one, two] {
            _ = try await images.nodeThumbnail(node)
            _ = try await images.nodeThumbnail(node, processor: resize64)
        }
        #expect(images.nodeThumbnailsCache.count == 4)
        images.flushNodeThumbnailCache(one)
        #expect(images.nodeThumbnailsCache.keys.allSatisfy { $0.ownerID == "two" } && images.nodeThumbnailsCache.count == 2)
        images.flushNodeThumbnailCache(processorID: "resize-64x64")
        #expect(images.nodeThumbnailsCache.keys == [ImageCacheKey(ownerID: "two")])
    }

    @Test func aCorruptThumbnailIsAnErrorAndIsNotCached() async throws {
        let setup = try ImageSetup()
        let images = ImageManager(diskManager: setup.b, callbackQueue: setup.callbacks)
        let node = try NodeID("broken")
        _ = try await setup.b.importNodeFile(DiskImport(cleartextData: Data(repeating: 0xAB, count: 5000)), nodeID: node, kind: .thumbnail)
        let record = FetchRecord()
        images.fetchNodeThumbnail(node, processor: resize64, preFetch: { _, _ in }, postFetch: record.postFetch)
        let post = try #require(await record.posts(1).first)
        #expect(post.image == nil && post.error?.code == .undecodable, "\(String(describing: post.error))")
        #expect(images.nodeThumbnailsCache.count == 0)

        let jpeg = try TestImages.jpeg(500, 400)
        _ = try await setup.b.importNodeFile(DiskImport(cleartextData: jpeg.prefix(jpeg.count / 3)), nodeID: node, kind: .thumbnail)
        do {
            _ = try await images.nodeThumbnail(node, processor: resize64)
            Issue.record("a truncated thumbnail was processed")
        } catch { #expect(error.code == .undecodable) }
        _ = try await setup.b.importNodeFile(DiskImport(cleartextData: jpeg), nodeID: node, kind: .thumbnail)
        #expect(try await images.nodeThumbnail(node, processor: resize64)?.width == 64)
    }
}
