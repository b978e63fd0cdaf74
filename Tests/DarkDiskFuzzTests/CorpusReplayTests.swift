import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskFuzzTargets
import Foundation
import Testing

/// Replays the committed fuzz corpus and every input that once broke a target (`Tests/Fuzz/Regressions`)
/// through the fuzz targets, so a fixed crash stays fixed. A failure here stops the test process with the
/// target's message, as it stopped the fuzzer.
// Serialized: the crypto targets share one scratch file per process, as the fuzzer (one input at a time) does.
@Suite(.serialized) struct CorpusReplayTests {
    static let fuzzFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().path + "/Fuzz"

    @Test(arguments: FuzzTarget.allCases)
    func corpusAndRegressionsReplay(_ target: FuzzTarget) throws {
        let corpus = FuzzSeeds.files(at: Self.fuzzFolder + "/Corpus/" + target.rawValue)
        #expect(!corpus.isEmpty, "Tests/Fuzz/Corpus/\(target.rawValue) holds the committed corpus")
        let regressions = FuzzSeeds.files(at: Self.fuzzFolder + "/Regressions/" + target.rawValue)
        for file in corpus + regressions {
            target.run(Array(try Data(contentsOf: URL(fileURLWithPath: file))))
        }
    }

    /// The seeds are well-formed, so mutations start past the first checks. (One test per kind of seed: in
    /// one, the expanded expectations made a frame too large for the test thread's stack, which crashed.)
    @Test func recordSeedsAreWellFormed() throws {
        let folder = Self.fuzzFolder + "/Corpus/"
        let record = try NodeRecord.parse(try Data(contentsOf: URL(fileURLWithPath: folder + "records/seed-0")), expected: NodeID("node-1"))
        #expect(record.dataSize == 5)
        let user = try UserRecord.parse(try Data(contentsOf: URL(fileURLWithPath: folder + "records/seed-1")), expected: UserID("user-1"))
        #expect(user.identities.count == 2)
    }

    @Test func listingAndHeaderSeedsAreWellFormed() throws {
        let folder = Self.fuzzFolder + "/Corpus/"
        let listing = try Data(contentsOf: URL(fileURLWithPath: folder + "s3xml/seed-0"))
        let page = try S3ListPage(listing, keyPrefix: "prefix/", remote: "s3://fuzz/prefix")
        #expect(page.objects.map(\.key) == ["records/a.json", "nodes/a.ddc"] && page.nextToken == "t1")
        let header = Array(try Data(contentsOf: URL(fileURLWithPath: folder + "header/seed-1")))
        #expect(try CryptoFileHeader(authenticating: header, key: FuzzTarget.fixtureKey, name: "seed").sectionSizes == [0, 0, 10_000])
    }

    /// The properties the targets check do fire: a changed byte of an encrypted file is caught, and the
    /// check itself sees a file read back (so a target that silently checked nothing would fail here).
    @Test func tamperTargetAcceptsUntouchedAndRefusesChangedFiles() {
        // Changing byte 100 of a 9,000-byte file under 4 KiB chunks: refused (the target would stop otherwise).
        FuzzTarget.tamper.run([0, 100, 0, 0, 0, 0x20] + Array(repeating: 7, count: 9_000))
        // Every position, for a small file: the header, each tag, each ciphertext byte.
        for position in stride(from: 0, to: 200, by: 1) {
            FuzzTarget.tamper.run([4, UInt8(position), 0, 0, 0, 1] + Array("short plaintext".utf8))
        }
    }
}
