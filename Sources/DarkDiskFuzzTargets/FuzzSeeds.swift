import DarkDiskCrypto
import Foundation

/// The starting corpus of each target: well-formed inputs (valid files under `FuzzTarget.fixtureKey`,
/// real records, S3 answers) from which libFuzzer's mutations reach past the first checks.
public enum FuzzSeeds {
    /// Writes `DIR/<target>/seed-N` for every target; returns how many inputs it wrote.
    public static func write(into directory: String) throws -> Int {
        var count = 0
        for target in FuzzTarget.allCases {
            let folder = directory + "/" + target.rawValue
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for (index, seed) in seeds(for: target).enumerated() {
                try Data(seed).write(to: URL(fileURLWithPath: folder + "/seed-\(index)"))
                count += 1
            }
        }
        return count
    }

    /// The regular files at `path`: itself, or the files of the folder it names (sorted), skipping dot files.
    public static func files(at path: String) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return [] }
        guard isDirectory.boolValue else { return [path] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { path + "/" + $0 }
    }

    static func seeds(for target: FuzzTarget) -> [[UInt8]] {
        let key = FuzzTarget.fixtureKey
        let texts: [String]
        switch target {
        case .header:
            return [encrypted(Array("hello".utf8), .cacheFile), encrypted(pattern(10_000), .cloudFile)].map { Array($0.prefix(CryptoFormat.headerSize)) }
        case .reader:
            return [encrypted([], .cacheFile), encrypted(Array("hello".utf8), .cacheFile), encrypted(pattern(9_000), .cacheFile),
                    encrypted(pattern(5_000), .cloudFile)]
        case .tamper:
            return [[0, 0, 0, 0, 0, 1] + Array("hello".utf8), [1, 80, 0, 0, 0, 0x80] + pattern(9_000), [4, 90, 0, 0, 0, 0xff] + pattern(100)]
        case .records:
            let wrapped = key.wrap(key).map { String(format: "%02x", $0) }.joined()
            texts = [
                #"{"cloudETag":"\"abc\"","dataSize":5,"metadataSize":0,"name":"a.txt","nodeID":"node-1","parentID":"root","thumbnailSize":0,"version":1,"wrappedKey":"\#(wrapped)"}"#,
                #"{"displayIdentityID":"auth0|1","identities":[{"avatar":{"plaintextSize":100,"size":196,"wrappedKey":"\#(wrapped)"},"identityID":"auth0|1"},{"identityID":"mail|x@y.z"}],"userID":"user-1","version":1}"#,
            ]
        case .ids:
            texts = ["node-1", "A_b-9", ".", "..", "a/b", "auth0|5f1c@example.com", String(repeating: "x", count: 64), "é"]
        case .xattr:
            return [[0] + Array("1".utf8), [1] + Array("-1\n".utf8), [3] + Array("1048576".utf8), [4] + Array("604800".utf8),
                    [200] + Array("user.darkdisk.pool.data.max_size".utf8), [200] + Array("user.darkdisk.local".utf8)]
        case .s3xml:
            texts = [
                #"<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>prefix/</Prefix><KeyCount>2</KeyCount><IsTruncated>true</IsTruncated><NextContinuationToken>t1</NextContinuationToken><Contents><Key>prefix/records/a.json</Key><Size>12</Size><ETag>&quot;e1&quot;</ETag></Contents><Contents><Key>prefix/nodes/a.ddc</Key><Size>99</Size><ETag>"e2"</ETag></Contents></ListBucketResult>"#,
                #"<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>"#,
            ]
        }
        return texts.map { Array($0.utf8) }
    }

    private static func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) } }

    private static func encrypted(_ plaintext: [UInt8], _ format: CryptoFileFormat) -> [UInt8] {
        FuzzScratch.shared.encrypted(plaintext, key: FuzzTarget.fixtureKey, format: format, chunkSize: CryptoFormat.defaultChunkSize)
    }
}
