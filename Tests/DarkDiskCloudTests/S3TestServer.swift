import DarkDiskCloud
import NIOCore
import Foundation

/// A real S3 server for one test: moto's, or Ceph's RADOS Gateway (`ConditionalWriteTests.Kind.rgw`, only
/// with `DARKDISK_TEST_RGW`), so the S3 tests run on both. It stays up while it lives.
final class S3TestServer {
    /// The S3 kinds a test runs on: moto always, RGW with `DARKDISK_TEST_RGW`.
    static let kinds = ConditionalWriteTests.Kind.allCases.filter { $0 != .file }

    let kind: ConditionalWriteTests.Kind
    private let moto: MotoServer?
    private let ceph: CephServer?

    init(_ kind: ConditionalWriteTests.Kind) throws {
        self.kind = kind
        if kind == .rgw {
            (moto, ceph) = (nil, try CephServer())
        } else {
            (moto, ceph) = (try MotoServer(), nil)
        }
    }

    var endpoint: String { moto?.endpoint ?? ceph!.endpoint }

    /// Credentials the server checks every signature against: on moto an IAM user's key, after which moto
    /// refuses wrong signatures as AWS does; on RGW the cluster's user.
    func authenticated() async throws -> S3Credentials {
        if let moto { return try await moto.authenticated() }
        return CephServer.credentials
    }

    /// Credentials that work before `authenticated()` (moto accepts any until then).
    var anyCredentials: S3Credentials { moto == nil ? CephServer.credentials : MotoServer.anyCredentials }

    /// A remote on this server; the bucket is created first unless `create` is false.
    func remote(bucket: String = "darkdisk", prefix: String = "", credentials: S3Credentials, create: Bool = true,
                partSize: Int = 16 << 20, listPageSize: Int? = nil, timeout: TimeAmount = .seconds(60)) async throws -> S3Remote {
        let remote = try S3Remote(bucket: bucket, prefix: prefix, endpoint: endpoint, credentials: credentials,
                                  timeout: timeout, partSize: partSize, listPageSize: listPageSize)
        if create { try await remote.createBucket() }
        return remote
    }

    /// How many multipart uploads of `bucket` are unfinished: moto's own count when it is moto (an unsigned
    /// request that does not go through the code under test), else the signed listing.
    func unfinishedUploads(bucket: String = "darkdisk") async throws -> Int {
        if let moto { return try await moto.multipartUploadsInProgress(bucket: bucket) }
        return try await remote(bucket: bucket, credentials: CephServer.credentials, create: false).unfinishedUploads(prefix: "").count
    }
}
