import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// The s3 remote: its Signature V4 against AWS' published examples, then every operation against moto's
/// real S3 server, with authentication on where the test allows it (see `MotoServer`): moto then checks each
/// signature with botocore's signer; and against Ceph's RADOS Gateway too with `DARKDISK_TEST_RGW`
/// (`S3TestServer`, `Scripts/test --long`).
@Suite(.ownThreads) struct S3RemoteTests {
    static let example = S3Credentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    static let may24 = Date(timeIntervalSince1970: 1_369_353_600)  // 2013-05-24T00:00:00Z

    static func signature(_ headers: [(String, String)]) -> String? {
        headers.first { $0.0 == "Authorization" }?.1.components(separatedBy: "Signature=").last
    }

    /// The examples of "Signature Calculations for the Authorization Header" in the Amazon S3 API reference.
    @Test func signerMatchesTheAWSExamples() {
        let signer = S3Signer(credentials: Self.example, region: "us-east-1")
        let host = "examplebucket.s3.amazonaws.com"
        let get = signer.sign(method: "GET", host: host, path: "/test.txt", query: [], headers: [("Range", "bytes=0-9")],
                              payloadHash: S3Signer.emptyPayloadHash, date: Self.may24)
        #expect(get.first { $0.0 == "Authorization" }?.1 == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(get.first { $0.0 == "x-amz-date" }?.1 == "20130524T000000Z")
        #expect(get.first { $0.0 == "x-amz-content-sha256" }?.1 == S3Signer.emptyPayloadHash)

        let body = Array("Welcome to Amazon S3.".utf8)
        #expect(Hex.encode(Digest.sha256(body)) == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let put = signer.sign(method: "PUT", host: host, path: "/test$file.text", query: [],
                              headers: [("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")],
                              payloadHash: Hex.encode(Digest.sha256(body)), date: Self.may24)
        #expect(Self.signature(put) == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
        #expect(S3Signer.encodePath("/test$file.text") == "/test%24file.text")

        let lifecycle = signer.sign(method: "GET", host: host, path: "/", query: [("lifecycle", "")], headers: [],
                                    payloadHash: S3Signer.emptyPayloadHash, date: Self.may24)
        #expect(Self.signature(lifecycle) == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")

        // The query given out of order: the canonical query sorts it.
        let list = signer.sign(method: "GET", host: host, path: "/", query: [("prefix", "J"), ("max-keys", "2")], headers: [],
                               payloadHash: S3Signer.emptyPayloadHash, date: Self.may24)
        #expect(Self.signature(list) == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
        #expect(S3Signer.canonicalQuery([("z", "a b"), ("a", "x/y+z"), ("a", "")]) == "a=&a=x%2Fy%2Bz&z=a%20b")

        // Temporary credentials add the session token to the signed headers.
        let temporary = S3Signer(credentials: S3Credentials(accessKeyID: "A", secretAccessKey: "S", sessionToken: "T"), region: "us-east-1")
        let signed = temporary.sign(method: "GET", host: host, path: "/", query: [], headers: [], payloadHash: S3Signer.emptyPayloadHash, date: Self.may24)
        #expect(signed.contains { $0 == ("x-amz-security-token", "T") })
        #expect(signed.first { $0.0 == "Authorization" }?.1.contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,") == true)
    }

    @Test func digestsMatchKnownValues() {
        #expect(Hex.encode(Digest.sha256(Data())) == S3Signer.emptyPayloadHash)
        #expect(Hex.encode(Digest.sha256(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        var hasher = Digest.SHA256()
        hasher.update(Array("a".utf8))
        hasher.update(Data("bc".utf8))
        #expect(Hex.encode(hasher.finalize()) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // RFC 4231 test case 2.
        #expect(Hex.encode(Digest.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func s3URLsParse() throws {
        let environment = ["AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret"]
        let full = try #require(try RemoteURL.remote("s3://my-bucket/team/a/?endpoint=http://127.0.0.1:9000&region=eu-west-1",
                                                     environment: environment) as? S3Remote)
        #expect(full.bucket == "my-bucket" && full.prefix == "team/a" && full.region == "eu-west-1")
        #expect(full.url == "s3://my-bucket/team/a?endpoint=http://127.0.0.1:9000&region=eu-west-1")
        let bare = try #require(try RemoteURL.remote("s3://bucket", environment: environment) as? S3Remote)
        #expect(bare.prefix == "" && bare.region == "us-east-1" && bare.url == "s3://bucket/")

        func failure(_ text: String, _ environment: [String: String]) -> RemoteError? {
            do { _ = try RemoteURL.remote(text, environment: environment); return nil } catch { return error }
        }
        #expect(failure("s3:///prefix", environment)?.message.contains("needs a bucket") == true)
        #expect(failure("s3://bucket/p?colour=red", environment)?.message.contains("colour") == true)
        #expect(failure("s3://bucket/p?endpoint=ftp://host", environment)?.message.contains("endpoint") == true)
        #expect(failure("s3://bucket/p?endpoint=http://host/path", environment)?.message.contains("endpoint") == true)
        #expect(failure("s3://bucket/p?region=", environment)?.message.contains("region") == true)
        #expect(failure("s3://bucket/p?region=EU%20WEST", environment)?.message.contains("region") == true)
        #expect(failure("s3://bucket/../up", environment)?.code == .invalidURL)
        #expect(failure("s3://bucket:9000/p", environment)?.code == .invalidURL)
        // Credentials come from the environment; without them the URL fails with what to set.
        let missing = failure("s3://bucket/p", [:])
        #expect(missing?.code == .invalidURL)
        #expect(missing?.message.contains("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY") == true)
        #expect(failure("s3://bucket/p", ["AWS_ACCESS_KEY_ID": "id"])?.message.contains("AWS_SECRET_ACCESS_KEY") == true)
        #expect(failure("s3:///p", [:])?.message.contains("bucket") == true, "a bad URL is reported before missing credentials")
    }

    @Test(arguments: S3TestServer.kinds) func objectsRoundTrip(_ kind: ConditionalWriteTests.Kind) async throws {
        let moto = try S3TestServer(kind)
        let credentials = moto.anyCredentials
        let s3 = try await moto.remote(prefix: "team/a", credentials: credentials, listPageSize: 7)
        let data = CloudTests.bytes(300_000, seed: 31)
        let written = try await s3.write("nodes/one.ddc", data: data)
        #expect(written.size == 300_000 && !written.etag.isEmpty)
        #expect(try await s3.info("nodes/one.ddc") == written)
        #expect(try await s3.read("nodes/one.ddc", range: 0..<300_000, ifMatch: written.etag) == data)
        #expect(try await s3.read("nodes/one.ddc", range: 1000..<1010, ifMatch: written.etag) == data[1000..<1010])
        #expect(try await s3.read("nodes/one.ddc", range: 299_999..<300_000, ifMatch: nil) == data[299_999..<300_000])
        #expect(try await s3.readAll("nodes/one.ddc") == data)

        // From a file, in one PUT (below the multipart threshold); keys live under the prefix.
        let directory = NSTemporaryDirectory() + "darkdisk-s3-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data("from a file".utf8).write(to: URL(fileURLWithPath: directory + "/f"))
        let fromFile = try await s3.write("records/f.json", fromFile: directory + "/f")
        #expect(try await s3.readAll("records/f.json") == Data("from a file".utf8))
        let whole = try await moto.remote(credentials: credentials, create: false)
        #expect(try await whole.info("team/a/records/f.json") == ObjectInfo(key: "team/a/records/f.json", size: 11, etag: fromFile.etag))

        // Listing in pages of 7: 25 records, continuation tokens followed, keys relative to the prefix.
        for i in 0..<24 { _ = try await s3.write(String(format: "records/r%02d.json", i), data: Data("\(i)".utf8)) }
        let records = try await s3.list(prefix: "records/")
        #expect(records.count == 25)
        #expect(records.map(\.key) == (["records/f.json"] + (0..<24).map { String(format: "records/r%02d.json", $0) }).sorted())
        #expect(records.first { $0.key == "records/r07.json" }?.size == 1)
        #expect(try await s3.list(prefix: "").count == 26)
        #expect(try await s3.list(prefix: "nothing/").isEmpty)
        let other = try await moto.remote(prefix: "team/b", credentials: credentials, create: false)
        #expect(try await other.list(prefix: "").isEmpty, "another prefix is another remote")

        // A stale ETag: the object was replaced, so If-Match fails.
        let replaced = try await s3.write("nodes/one.ddc", data: Data("version two".utf8))
        #expect(replaced.etag != written.etag)
        do {
            _ = try await s3.read("nodes/one.ddc", range: 0..<4, ifMatch: written.etag)
            Issue.record("a read with a stale ETag succeeded")
        } catch { #expect(error.code == .changed) }
        do {
            _ = try await s3.read("nodes/one.ddc", range: 5..<50, ifMatch: replaced.etag)
            Issue.record("a range past the end succeeded")
        } catch { #expect(error.code == .invalidResponse) }

        // Missing keys; deletion, also of what is not there.
        #expect(try await s3.info("nodes/missing.ddc") == nil)
        do {
            _ = try await s3.read("nodes/missing.ddc", range: 0..<1, ifMatch: nil)
            Issue.record("a missing object was read")
        } catch { #expect(error.code == .notFound) }
        try await s3.delete("nodes/one.ddc")
        try await s3.delete("nodes/one.ddc")
        #expect(try await s3.info("nodes/one.ddc") == nil)
        #expect(try await s3.list(prefix: "nodes/").isEmpty)
        await #expect(throws: RemoteError.self) { _ = try await s3.info("../outside") }
    }

    @Test(arguments: S3TestServer.kinds) func largeFilesUploadInParts(_ kind: ConditionalWriteTests.Kind) async throws {
        let moto = try S3TestServer(kind)
        let credentials = try await moto.authenticated()
        // (moto keeps every part in one Python process: on a busy two-core machine a part of 8 MiB took it
        // more than the default minute to answer. The stall timeout is not what this test is about.)
        let s3 = try await moto.remote(credentials: credentials, partSize: 8 << 20, timeout: .seconds(300))
        let directory = NSTemporaryDirectory() + "darkdisk-s3-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let data = CloudTests.bytes(40 << 20, seed: 32)
        try data.write(to: URL(fileURLWithPath: directory + "/big"))

        let info = try await s3.write("nodes/big.ddc", fromFile: directory + "/big")
        #expect(info.size == 40 << 20)
        #expect(info.etag.hasSuffix("-5\""), "a multipart ETag names its 5 parts: \(info.etag)")
        #expect(try await s3.info("nodes/big.ddc") == info)

        var hasher = Digest.SHA256()
        var received = 0
        try await s3.read("nodes/big.ddc", range: 0..<info.size, ifMatch: info.etag) { (bytes: UnsafeRawBufferPointer) throws(RemoteError) in
            hasher.update(bytes)
            received += bytes.count
        }
        #expect(received == 40 << 20)
        #expect(Hex.encode(hasher.finalize()) == Hex.encode(Digest.sha256(data)))
        // A range across a part boundary.
        #expect(try await s3.read("nodes/big.ddc", range: (8 << 20) - 5..<(8 << 20) + 5, ifMatch: info.etag) == data[(8 << 20) - 5..<(8 << 20) + 5])
    }

    /// Parts below S3's 5 MiB minimum make CompleteMultipartUpload fail: the error is clear, the upload is
    /// aborted (no parts left in the bucket) and no object appears.
    @Test(arguments: S3TestServer.kinds) func aFailedMultipartUploadIsAborted(_ kind: ConditionalWriteTests.Kind) async throws {
        let moto = try S3TestServer(kind)
        let s3 = try await moto.remote(credentials: moto.anyCredentials, partSize: 1 << 20)
        let directory = NSTemporaryDirectory() + "darkdisk-s3-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try CloudTests.bytes(3 << 20, seed: 34).write(to: URL(fileURLWithPath: directory + "/f"))
        do {
            _ = try await s3.write("nodes/small-parts.ddc", fromFile: directory + "/f")
            Issue.record("parts of 1 MiB were accepted")
        } catch {
            #expect(error.code == .invalidResponse && error.message.contains("EntityTooSmall"), "\(error)")
        }
        #expect(try await moto.unfinishedUploads() == 0)
        #expect(try await s3.info("nodes/small-parts.ddc") == nil)
        do {
            _ = try await s3.write("nodes/none.ddc", fromFile: directory + "/missing")
            Issue.record("a missing file was uploaded")
        } catch { #expect(error.code == .io) }
    }

    @Test(arguments: S3TestServer.kinds) func pushOnOneStorePullAndReadOnAnotherThroughS3(_ kind: ConditionalWriteTests.Kind) async throws {
        let moto = try S3TestServer(kind)
        let s3 = try await moto.remote(prefix: "stores/shared", credentials: moto.anyCredentials)
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(3_000_000, seed: 33)
        try await CloudSync(manager: setup.a, remote: s3).push(dataFile: setup.file("d", data), nodeID: NodeID("photo"), name: "photo.jpg",
                                                               thumbnail: Data("thumb".utf8), metadata: Data("{}".utf8))
        try await CloudSync(manager: setup.a, remote: s3).push(dataFile: setup.file("s", Data("small".utf8)), nodeID: NodeID("small"))

        let result = try await CloudSync(manager: setup.b, remote: s3).pull()
        #expect(result.added == 2)
        #expect(try await setup.b.outline.entry(NodeID("photo"))?.name == "photo.jpg")
        let downloads = DownloadManager(manager: setup.b, remote: s3, partSize: 1 << 20)
        #expect(try CloudTests().plaintext(try await downloads.nodeData(NodeID("photo"))) == data)
        #expect(try CloudTests().plaintext(try await downloads.nodeData(NodeID("small"))) == Data("small".utf8))

        // Credentials that stop working make the pull fail; they never read as an empty bucket.
        let credentials = try await moto.authenticated()
        let refused = try S3Remote(bucket: s3.bucket, prefix: s3.prefix, endpoint: moto.endpoint,
                                   credentials: S3Credentials(accessKeyID: credentials.accessKeyID, secretAccessKey: "wrong"))
        do {
            _ = try await CloudSync(manager: setup.b, remote: refused).pull()
            Issue.record("a pull with a wrong secret succeeded")
        } catch let error as RemoteError {
            #expect(error.message.contains("signature does not match"), "\(error)")
        }
        #expect(try await setup.b.outline.entries().count == 2)
    }

    @Test(arguments: S3TestServer.kinds) func badBucketsAndCredentialsFailClearly(_ kind: ConditionalWriteTests.Kind) async throws {
        let moto = try S3TestServer(kind)
        let credentials = try await moto.authenticated()
        let s3 = try await moto.remote(credentials: credentials)

        // The right credentials: botocore, in moto, accepts every signature.
        let written = try await s3.write("records/x.json", data: Data("signed".utf8))
        #expect(try await s3.info("records/x.json") == written)
        #expect(try await s3.read("records/x.json", range: 1..<4, ifMatch: written.etag) == Data("ign".utf8))
        #expect(try await s3.list(prefix: "records").map(\.key) == ["records/x.json"])
        try await s3.delete("records/x.json")
        #expect(try await s3.info("records/x.json") == nil)

        // A bucket that does not exist: every operation says so, naming it.
        let nowhere = try await moto.remote(bucket: "no-such-bucket", credentials: credentials, create: false)
        for (what, operation) in Self.operations(nowhere) {
            do {
                try await operation()
                Issue.record("\(what) on a missing bucket succeeded")
            } catch {
                #expect(error.code == .invalidURL, "\(what): \(error)")
                #expect(error.message.contains("'no-such-bucket' does not exist"), "\(what): \(error)")
            }
        }

        // A wrong secret key and an unknown key ID: the signature is refused, and said so (not "not found").
        let wrongSecret = try await moto.remote(credentials: S3Credentials(accessKeyID: credentials.accessKeyID, secretAccessKey: "wrong"), create: false)
        for (what, operation) in Self.operations(wrongSecret) {
            do {
                try await operation()
                Issue.record("\(what) with a wrong secret succeeded")
            } catch {
                #expect(error.code == .invalidURL, "\(what): \(error)")
                #expect(error.message.contains("signature does not match"), "\(what): \(error)")
            }
        }
        let unknownKey = try await moto.remote(credentials: S3Credentials(accessKeyID: "AKIANOBODY", secretAccessKey: "x"), create: false)
        do {
            _ = try await unknownKey.info("records/x.json")
            Issue.record("an unknown access key was accepted")
        } catch {
            #expect(error.code == .invalidURL && error.message.contains("AWS_ACCESS_KEY_ID"), "\(error)")
        }

        // Nobody listening: unreachable after retries.
        let closed = try S3Remote(bucket: "darkdisk", endpoint: "http://127.0.0.1:\(try Nginx.freePort())", credentials: credentials,
                                  timeout: .seconds(2), attempts: 2)
        do {
            _ = try await closed.list(prefix: "")
            Issue.record("a closed port answered")
        } catch { #expect(error.code == .unreachable) }
    }

    /// Listings a server answers with 200 but that are not S3 listings: invalid responses, never a crash or
    /// an empty list. nginx serves the file named like the bucket whatever the query.
    @Test func garbageListingsAreInvalidResponses() async throws {
        let root = NSTemporaryDirectory() + "darkdisk-s3-garbage-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let documents = [
            "garbage": "\u{0}\u{1}not < xml & at all",
            "unclosed": "<ListBucketResult><Contents><Key>a</Key>",
            "other": "<Error><Code>Weird</Code></Error>",
            "nosize": "<ListBucketResult><Contents><Key>a</Key><ETag>\"e\"</ETag></Contents></ListBucketResult>",
            "notoken": "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
            "outside": "<ListBucketResult><Contents><Key>elsewhere/a</Key><Size>1</Size><ETag>\"e\"</ETag></Contents></ListBucketResult>",
        ]
        for (name, text) in documents { try Data(text.utf8).write(to: URL(fileURLWithPath: root + "/" + name)) }
        try Data("<ListBucketResult><Contents><Key>p/a</Key><Size>3</Size><ETag>\"e\"</ETag></Contents></ListBucketResult>".utf8)
            .write(to: URL(fileURLWithPath: root + "/good"))
        let nginx = try Nginx(root: root)
        let credentials = S3Credentials(accessKeyID: "id", secretAccessKey: "secret")
        for name in documents.keys.sorted() {
            let remote = try S3Remote(bucket: name, prefix: "p", endpoint: nginx.url, credentials: credentials)
            do {
                _ = try await remote.list(prefix: "")
                Issue.record("the listing '\(name)' was accepted")
            } catch {
                #expect(error.code == .invalidResponse, "\(name): \(error)")
            }
        }
        let good = try S3Remote(bucket: "good", prefix: "p", endpoint: nginx.url, credentials: credentials)
        #expect(try await good.list(prefix: "") == [ObjectInfo(key: "a", size: 3, etag: "\"e\"")], "the same server with a real listing")
    }

    /// Every operation of a remote, for checking that each reports the same configuration error.
    static func operations(_ remote: S3Remote) -> [(String, () async throws(RemoteError) -> Void)] {
        [
            ("list", { () async throws(RemoteError) in _ = try await remote.list(prefix: "records") }),
            ("info", { () async throws(RemoteError) in _ = try await remote.info("records/x.json") }),
            ("read", { () async throws(RemoteError) in _ = try await remote.read("records/x.json", range: 0..<1, ifMatch: nil) }),
            ("write", { () async throws(RemoteError) in _ = try await remote.write("records/x.json", data: Data("x".utf8)) }),
            ("delete", { () async throws(RemoteError) in try await remote.delete("records/x.json") }),
        ]
    }
}
