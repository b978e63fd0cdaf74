import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskSync
import Foundation
import Testing

/// `whenReadable`: one call for "plaintext [o, o+n) of node X" (what the mount's reads of remote-only nodes use).
@Suite struct WhenReadableTests {
    func readable(_ downloads: DownloadManager, _ id: NodeID, key: SymmetricKey, _ range: Range<UInt64>, ticket: DownloadTicket<NodeDataDownload>? = nil,
                  known: PartialReader? = nil) async -> Result<PlaintextSource, any Error> {
        await withCheckedContinuation { continuation in
            downloads.whenReadable(id, key: key, plaintext: range, ticket: ticket, on: .shared, known: known) { continuation.resume(returning: $0) }
        }
    }

    func plaintext(_ source: PlaintextSource, _ range: Range<UInt64>) throws -> Data {
        let reader = switch source {
        case .stored(let export): try export.reader()
        case .downloading(let partial): partial.reader
        }
        return Data(try reader.read(section: reader.dataSection, offset: range.lowerBound, count: range.count))
    }

    @Test func aPlaintextRangeDeepInADownloadIsReadableBeforeTheRest() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(6_000_000, seed: 71)
        let id = try await setup.pushedAndPulled(data, as: "plain-deep")
        let key = try setup.key(of: id)
        let total = try await setup.cloudFileSize(id)
        let (downloads, slow) = setup.slowDownloads(microsecondsPer64KiB: 15_000)
        let ticket = downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true))

        let deep: Range<UInt64> = 5_800_000..<5_804_096
        let source = try await readable(downloads, id, key: key, deep, ticket: ticket).get()
        let sent = slow.bytesRead.load(ordering: .relaxed)
        guard case .downloading(let partial) = source else { Issue.record("answered from a stored file"); return }
        #expect(try plaintext(source, deep) == data[Int(deep.lowerBound)..<Int(deep.upperBound)])
        #expect(sent < total / 2, "answered after \(sent) of \(total) bytes: the chunks it needs came first")

        // The reader handed back serves the next range of the same partial file.
        let early: Range<UInt64> = 100..<70_000
        let next = try await readable(downloads, id, key: key, early, ticket: ticket, known: partial).get()
        if case .downloading(let again) = next { #expect(again.isSameFile(as: partial)) }
        #expect(try plaintext(next, early) == data[100..<70_000])

        _ = try await ticket.value
        let stored = try await readable(downloads, id, key: key, 0..<10).get()
        guard case .stored = stored else { Issue.record("a landed download is read from the store"); return }
        #expect(try plaintext(stored, 0..<10) == data[0..<10])
    }

    /// A node larger than the whole cache pool lands as a temporary file its ticket keeps: reads that follow
    /// the finished ticket are answered from it. They used to start a second download of the whole node.
    @Test func aDownloadTooLargeForThePoolIsReadFromItsTicket() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(1_000_000, seed: 73)
        let id = try await setup.pushedAndPulled(data, as: "plain-big")
        let key = try setup.b.keys.unwrap(try #require(try await setup.b.outline.entry(id)).wrappedKey, for: .node(id))
        try setup.b.files.setMaxSize(100_000, for: .data)
        let counting = FaultyRemote(setup.remote)
        let downloads = DownloadManager(manager: setup.b, remote: counting, partSize: 256 * 1024)
        let ticket = downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true))
        let landed = try await ticket.value
        #expect(landed.export == nil, "larger than the pool: not stored")
        let sent = counting.bytesRead.load(ordering: .relaxed)

        let range: Range<UInt64> = 500_000..<600_000
        let source = try await readable(downloads, id, key: key, range, ticket: ticket).get()
        #expect(try plaintext(source, range) == data[500_000..<600_000])
        #expect(counting.bytesRead.load(ordering: .relaxed) == sent, "no second download")
        await #expect(try setup.b.files.partialDownload(id) == nil, "and no partial one left behind")
    }

    @Test func aWrongKeyIsRefusedAtTheHeader() async throws {
        let setup = try CloudTests.Setup()
        let id = try await setup.pushedAndPulled(CloudTests.bytes(300_000, seed: 72), as: "plain-key")
        let slow = FaultyRemote(setup.remote)
        slow.delayPer64KiB.store(30_000, ordering: .relaxed)  // still downloading when the header is checked
        let downloads = DownloadManager(manager: setup.b, remote: slow, partSize: 64 * 1024, parallelParts: 1)
        let wrong = try SymmetricKey(bytes: [UInt8](repeating: 7, count: 32))
        let result = await readable(downloads, id, key: wrong, 0..<100)
        #expect(throws: CryptoError.self) { try result.get() }
    }
}
