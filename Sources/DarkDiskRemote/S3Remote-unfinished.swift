import Foundation

/// A multipart upload the server holds neither completed nor aborted.
public struct UnfinishedUpload: Sendable, Equatable {
    /// The object key, relative to the remote's prefix.
    public let key: String
    public let uploadID: String
    public let initiated: Date
}

extension S3Remote {
    /// The unfinished multipart uploads under `listPrefix` (ListMultipartUploads, every page).
    public func unfinishedUploads(prefix listPrefix: String) async throws(RemoteError) -> [UnfinishedUpload] {
        if !listPrefix.isEmpty { try RemoteKey.check(listPrefix) }
        let keyPrefix = prefix.isEmpty ? "" : prefix + "/"
        var result: [UnfinishedUpload] = []
        var marker: (key: String, uploadID: String)?
        repeat {
            var query = [("uploads", ""), ("prefix", keyPrefix + listPrefix)]
            if let marker { query += [("key-marker", marker.key), ("upload-id-marker", marker.uploadID)] }
            let response = try await perform(.GET, path: rootPath, query: query, limit: 16 << 20)
            guard response.status == .ok else { throw failure(response, "listing unfinished uploads") }
            guard let document = S3XML.parse(response.body), document.name == "ListMultipartUploadsResult" else {
                throw RemoteError(.invalidResponse, "\(url): the list of unfinished uploads is not an S3 ListMultipartUploadsResult document")
            }
            for upload in document.children("Upload") {
                guard let key = upload.text("Key"), key.hasPrefix(keyPrefix), key.count > keyPrefix.count,
                      let id = upload.text("UploadId"), !id.isEmpty,
                      let initiated = upload.text("Initiated").flatMap(Self.parseTimestamp) else {
                    throw RemoteError(.invalidResponse, "\(url): an unfinished upload without a key under the prefix, an ID or a start time")
                }
                result.append(UnfinishedUpload(key: String(key.dropFirst(keyPrefix.count)), uploadID: id, initiated: initiated))
            }
            guard document.text("IsTruncated") == "true" else { break }
            guard let key = document.text("NextKeyMarker"), let id = document.text("NextUploadIdMarker"),
                  !key.isEmpty, marker.map({ $0.key != key || $0.uploadID != id }) ?? true else {
                throw RemoteError(.invalidResponse, "\(url): a truncated list of unfinished uploads without a new marker")
            }
            marker = (key, id)
        } while true
        return result
    }

    /// AbortMultipartUpload: the server drops the upload's parts. An upload already gone is not an error.
    public func abort(_ upload: UnfinishedUpload) async throws(RemoteError) {
        try RemoteKey.check(upload.key)
        let response = try await perform(.DELETE, path: objectPath(upload.key), query: [("uploadId", upload.uploadID)])
        guard response.status == .noContent || response.status == .ok || response.status == .notFound else {
            throw failure(response, "aborting the upload of \(upload.key)")
        }
    }

    public func abortUnfinishedUploads(prefix: String, startedBefore date: Date) async throws(RemoteError) -> Int {
        var aborted = 0
        for upload in try await unfinishedUploads(prefix: prefix) where upload.initiated < date {
            try await abort(upload)
            aborted += 1
        }
        return aborted
    }

    /// An S3 timestamp: ISO 8601 in UTC, with or without milliseconds.
    static func parseTimestamp(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
