import Foundation

/// One page of a ListObjectsV2 answer: the objects (keys made relative to the remote's prefix) and the
/// continuation token of the next page, if the listing is truncated.
package struct S3ListPage {
    package let objects: [ObjectInfo]
    package let nextToken: String?

    /// Parses `body`; anything but a well-formed `ListBucketResult` whose objects all have a key under
    /// `keyPrefix`, a size and an ETag is `.invalidResponse`.
    package init(_ body: Data, keyPrefix: String, remote: String) throws(RemoteError) {
        guard let document = S3XML.parse(body), document.name == "ListBucketResult" else {
            throw RemoteError(.invalidResponse, "\(remote): the listing is not an S3 ListBucketResult document")
        }
        var objects: [ObjectInfo] = []
        for entry in document.children("Contents") {
            guard let key = entry.text("Key"), key.hasPrefix(keyPrefix), key.count > keyPrefix.count,
                  let size = entry.text("Size").flatMap({ UInt64($0) }), let etag = entry.text("ETag"), !etag.isEmpty else {
                throw RemoteError(.invalidResponse, "\(remote): the listing has an entry without a key under the prefix, a size or an ETag")
            }
            objects.append(ObjectInfo(key: String(key.dropFirst(keyPrefix.count)), size: size, etag: etag))
        }
        self.objects = objects
        switch document.text("IsTruncated") {
        case "true":
            guard let token = document.text("NextContinuationToken"), !token.isEmpty else {
                throw RemoteError(.invalidResponse, "\(remote): a truncated listing without a continuation token")
            }
            nextToken = token
        case "false", nil:
            nextToken = nil
        default:
            throw RemoteError(.invalidResponse, "\(remote): the listing's IsTruncated is neither true nor false")
        }
    }
}
