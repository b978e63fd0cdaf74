import DarkDiskTestSupport
import Foundation
import Testing

/// `darkdisk locate`: a node's object names in the bucket, and back from a bucket key to the node; every
/// other input fails in one line.
@Suite(.processSlots) struct LocateCommandTests {
    @Test func locatesBothWaysAndRefusesWhatItCannot() async throws {
        let remote = try RemoteBucket()
        try remote.push("doc", Data("located".utf8))
        let name = try remote.objectName("doc")
        let located = try await remote.a.darkdisk(["locate", "--node", "doc", "--passphrase-file", remote.passphrase])
        #expect(located.status == 0 && located.output == "records/\(name).rec\nnodes/\(name)/\n", "\(located.output)")
        #expect(FileManager.default.fileExists(atPath: remote.bucket + "/records/\(name).rec"))
        let version = try remote.cloudObject("doc").dropFirst()
        for key in ["records/\(name).rec", String(version)] {
            let back = try await remote.a.darkdisk(["locate", key, "--passphrase-file", remote.passphrase])
            #expect(back.status == 0 && back.output == "doc\n", "\(key): \(back.output) \(back.stderr)")
        }
        for (arguments, mentioning) in [([String](), "either --node ID or a bucket KEY"),
                                        (["--node", "doc", "records/\(name).rec"], "either --node ID or a bucket KEY"),
                                        (["--node", "no/such id"], "is not a node ID"),
                                        (["keys/master.json"], "neither a record key"),
                                        (["records/0123456789abcdef0123456789abcdef.rec"], "belongs to no node this store knows")] {
            await expectOneLineFailure(try remote.a.darkdisk(["locate"] + arguments + ["--passphrase-file", remote.passphrase]), mentioning: mentioning)
        }
    }
}
