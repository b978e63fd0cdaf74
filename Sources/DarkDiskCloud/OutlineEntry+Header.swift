import DarkDiskStore
import DarkDiskCrypto

extension OutlineEntry {
    /// The file ID this store bound cloud-file `version` to (at its push, or when it first pulled a record
    /// from before file IDs, which names none): `known`'s (this store's entry of the node), when `known`
    /// names the same version.
    static func boundFileID(of version: String?, known: OutlineEntry?) -> [UInt8]? {
        guard let known, known.cloudVersion == version else { return nil }
        return known.cloudFileID
    }

    /// Checks that the sizes this record gives agree with the cloud file's authenticated header. A record
    /// is only sealed by whoever wrote the bucket, so a size that lies (a record altered on the remote)
    /// would otherwise be served as a file cut short or padded: the header, authenticated by the node's key,
    /// is the truth, and a record that disagrees with it serves nothing.
    /// And that the header's file ID is the one the record names: the bucket's owner could otherwise put an
    /// older version of the node's content (same key, same sizes) in the place of the current one.
    func checkAgreement(with header: CryptoFileHeader, objectKey: String) throws(RemoteError) {
        if let expected = cloudFileID, header.fileID != expected {
            throw RemoteError(.invalidResponse, "the cloud file \(objectKey) of node '\(nodeID)' is not the version its record names (file ID \(Hex.encode(header.fileID)), not \(Hex.encode(expected)): another version put in its place on the remote); nothing of it is served")
        }
        let sections: [(CloudFileSection, UInt64)] = [(.metadata, metadataSize), (.thumbnail, thumbnailSize), (.data, dataSize)]
        for (section, recorded) in sections where header.sectionSizes.count > section.rawValue {
            let actual = header.sectionSizes[section.rawValue]
            guard actual == recorded else {
                throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' gives its \(section.fileKind.rawValue) as \(recorded) bytes but its cloud file \(objectKey) holds \(actual) (a record altered on the remote); nothing of it is served")
            }
        }
    }
}
