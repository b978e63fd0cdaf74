import DarkDiskStore
import DarkDiskCloud
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A `darkdisk sync` killed (`kill -9`) in the middle of a multipart upload leaves the upload
/// unfinished on the S3 server, its parts billed and unlisted. `gc` aborts such uploads once they are older
/// than its upload grace, the queue then drains, and `check --remote` passes. Real CLI processes, real
/// servers (moto, and Ceph RGW with `DARKDISK_TEST_RGW`).
@Suite(.processSlots) struct UnfinishedUploadTests {
    static let kinds: [ConditionalWriteTests.Kind] = ConditionalWriteTests.Kind.allCases.filter { $0 != .file }

    @Test(arguments: Self.kinds) func gcAbortsTheUploadAKilledSyncLeft(_ kind: ConditionalWriteTests.Kind) async throws {
        let server: AnyObject
        let remote: S3Remote
        let credentials: S3Credentials
        let endpoint: String
        if kind == .s3 {
            let moto = try MotoServer()
            (server, credentials, endpoint) = (moto, MotoServer.anyCredentials, moto.endpoint)
            remote = try await moto.remote(credentials: credentials)
        } else {
            let ceph = try CephServer()
            (server, credentials, endpoint) = (ceph, CephServer.credentials, ceph.endpoint)
            remote = try await ceph.remote()
        }
        defer { withExtendedLifetime(server) {} }
        let directory = NSTemporaryDirectory() + "darkdisk-unfinished-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var environment = ProcessInfo.processInfo.environment
        environment["AWS_ACCESS_KEY_ID"] = credentials.accessKeyID
        environment["AWS_SECRET_ACCESS_KEY"] = credentials.secretAccessKey
        environment.removeValue(forKey: "DARKDISK_STORE")
        environment.removeValue(forKey: "DARKDISK_PASSPHRASE_FILE")
        let store = directory + "/store"
        func darkdisk(_ arguments: [String]) async throws -> (status: Int32, output: String) {
            let output = directory + "/out-" + UUID().uuidString
            defer { try? FileManager.default.removeItem(atPath: output) }
            let pid = try ChildProcess.spawn(DarkDiskBinary.path, arguments + ["--store", store], environment: environment,
                                             stdout: output, stderr: output)
            let status = await ChildProcess.exitStatus(pid)
            return (status, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
        }

        let url = "s3://darkdisk/kill?endpoint=\(endpoint)"
        #expect(try await darkdisk(["init", "--remote", url]).status == 0)
        // Room for the node in the cache pool, where it moves once uploaded (read back at the end).
        #expect(try await darkdisk(["config", "set", "pool.data.max_size", "256M"]).status == 0)
        // Kill the sync once its multipart upload has started on the server. On loopback the upload can
        // finish between the sighting and the kill: then a new version is queued and the next sync killed.
        let prefixed = try S3Remote(bucket: "darkdisk", prefix: "kill", endpoint: endpoint, credentials: credentials)
        var data = Data()
        var left: [UnfinishedUpload] = []
        for attempt in 0..<5 where left.isEmpty {
            data = CloudTests.bytes(48 << 20, seed: 77 + UInt64(attempt))
            let source = directory + "/big"
            try data.write(to: URL(fileURLWithPath: source))
            let queued = try await darkdisk(["push", source, "--node", "big", "--no-wait"])
            #expect(queued.status == 0, "\(queued.output)")
            let sync = try ChildProcess.spawn(DarkDiskBinary.path, ["sync", "--store", store], environment: environment)
            var started = false, exited = false
            for _ in 0..<1500 where !started && !exited {
                started = !(try await prefixed.unfinishedUploads(prefix: "nodes/")).isEmpty
                var status: Int32 = 0
                if !started { exited = waitpid(sync, &status, WNOHANG) == sync }
                if !started && !exited { try await Task.sleep(nanoseconds: 20_000_000) }
            }
            if !exited {
                kill(sync, SIGKILL)
                _ = await ChildProcess.exitStatus(sync)
                // A CompleteMultipartUpload the sync sent before it died may still be landing on the server.
                try await Task.sleep(nanoseconds: 2_000_000_000)
            }
            left = try await prefixed.unfinishedUploads(prefix: "nodes/")
        }
        try #require(!left.isEmpty, "no sync was caught in the middle of its multipart upload in 5 tries")
        let located = try await darkdisk(["locate", "--node", "big"])
        let folder = located.output.split(separator: "\n").last.map(String.init) ?? "?"
        #expect(located.status == 0 && folder.hasPrefix("nodes/") && !folder.contains("big"), "\(located.output)")
        #expect(left.count == 1 && left[0].key.hasPrefix(folder), "\(left)")
        if let moto = server as? MotoServer {
            #expect(try await moto.multipartUploadsInProgress() == 1, "moto's own count")
        }

        // Inside the upload grace, gc leaves it (it may be a live upload elsewhere); past it, aborts it.
        // (moto dates every upload 2010-11-10, so there even the default grace is long past.)
        if kind != .s3 {
            let waiting = try await darkdisk(["gc"])
            #expect(waiting.status == 0 && !waiting.output.contains("aborted"), "\(waiting.output)")
            #expect(try await prefixed.unfinishedUploads(prefix: "nodes/").count == 1)
        }
        let gc = try await darkdisk(["gc", "--upload-grace", "0"])
        #expect(gc.status == 0 && gc.output.contains("aborted 1 unfinished uploads"), "\(gc.output)")
        #expect(try await prefixed.unfinishedUploads(prefix: "nodes/").isEmpty)
        if let moto = server as? MotoServer {
            #expect(try await moto.multipartUploadsInProgress() == 0, "moto's own count")
        }
        #expect(try await remote.unfinishedUploads(prefix: "").isEmpty, "nothing is left in the whole bucket")

        // The queue still holds the change: it uploads from the start, and the bucket checks clean.
        let drained = try await darkdisk(["sync"])
        #expect(drained.status == 0, "\(drained.output)")
        let check = try await darkdisk(["check", "--remote"])
        #expect(check.status == 0, "\(check.output)")
        // Read from the remote: the local copy goes first.
        let deleted = try await darkdisk(["delete", "--node", "big"])
        #expect(deleted.status == 0, "\(deleted.output)")
        let out = directory + "/big.out"
        let export = try await darkdisk(["export", "--node", "big", "--output", out])
        #expect(export.status == 0, "\(export.output)")
        #expect(FileManager.default.contents(atPath: out) == data)
    }

    /// Credentials that may not list or abort multipart uploads do not stop `gc`: the versions are still
    /// collected, and the result says why the uploads were not (the CLI prints it on stderr).
    @Test func gcCollectsVersionsWhenUploadsCannotBeListed() async throws {
        let setup = try CloudTests.Setup()
        let refusing = InterceptingRemote(setup.remote, unfinishedUploadsError: RemoteError(.invalidURL, "\(setup.remote.url): AccessDenied: listing multipart uploads is not allowed"))
        let sync = CloudSync(manager: setup.a, remote: refusing)
        let id = try NodeID("versions")
        try await sync.push(dataFile: setup.file("v1", Data("one".utf8)), nodeID: id)
        try await sync.push(dataFile: setup.file("v2", Data("two".utf8)), nodeID: id)
        #expect(try await setup.remote.list(prefix: "nodes/\(CloudLayout.nodeName(id, with: setup.a))/").count == 2)
        _ = try await sync.collectGarbage(grace: 0)
        let result = try await sync.collectGarbage(grace: 0)
        #expect(result.uploadCleanupFailure?.contains("AccessDenied") == true, "\(result)")
        #expect(try await setup.remote.list(prefix: "nodes/\(CloudLayout.nodeName(id, with: setup.a))/").count == 1, "the unnamed version went all the same")
    }
}
