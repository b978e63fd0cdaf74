import DarkDiskSystem
import Foundation
import NIOHTTP1
#if canImport(Glibc)
import Glibc
#endif

/// Writing objects to an S3 remote: one PUT for data in memory and for files up to the multipart
/// threshold; above it a multipart upload whose parts stream from the file, several at a time.
extension S3Remote {
    /// One PUT; a condition is `If-None-Match: *` or `If-Match` with the ETag unquoted (AWS and moto take
    /// either form, Ceph RGW 16.2 only that one). A 412, a 404 for `If-Match` (the object went) and AWS's
    /// 409 for a concurrent conditional write are `.preconditionFailed`.
    public func write(_ key: String, data: Data, condition: WriteCondition) async throws(RemoteError) -> ObjectInfo {
        try RemoteKey.check(key)
        var headers: [(String, String)] = []
        switch condition {
        case .none: break
        case .absent: headers.append(("If-None-Match", "*"))
        case .matches(let etag): headers.append(("If-Match", etag.replacingOccurrences(of: "\"", with: "")))
        }
        let response = try await perform(.PUT, path: objectPath(key), headers: headers, payload: .data(data))
        if condition != .none {
            let code = S3XML.parse(response.body)?.text("Code")
            if response.status == .preconditionFailed || response.status == .conflict
                || (response.status == .notFound && code != "NoSuchBucket") {
                throw RemoteError(.preconditionFailed, "\(url): \(key) is not as this write expected (\(condition == .absent ? "it exists" : "it changed or went"))")
            }
        }
        return try written(response, key: key, size: UInt64(data.count))
    }

    /// Uploads the file's bytes as they are on disk, streamed (never the whole file in memory); the
    /// signature covers each body's SHA-256, so a file that changes during the upload is refused.
    public func write(_ key: String, fromFile path: String) async throws(RemoteError) -> ObjectInfo {
        try RemoteKey.check(key)
        let file: OwnedDescriptor
        do { file = try OwnedDescriptor.open(path, O_RDONLY) } catch { throw RemoteError(.io, "cannot open \(path): \(error)") }
        let st: stat
        do { st = try file.stat() } catch { throw RemoteError(.io, "cannot stat \(path): \(error)") }
        let size = UInt64(st.st_size)
        guard size > multipartThreshold else {
            let slice = FileSlice(file: file, offset: 0, count: size, path: path)
            let response = try await perform(.PUT, path: objectPath(key), payload: .file(slice, sha256: try slice.sha256()))
            return try written(response, key: key, size: size)
        }
        return try await multipartUpload(key, file: file, size: size, path: path)
    }

    /// The info of an object a PUT stored, from the answer's ETag.
    private func written(_ response: Response, key: String, size: UInt64) throws(RemoteError) -> ObjectInfo {
        guard response.status == .ok else { throw failure(response, "writing \(key)") }
        guard let etag = response.headers.first(name: "ETag"), !etag.isEmpty else {
            throw RemoteError(.invalidResponse, "\(url): the PUT of \(key) answered no ETag")
        }
        return ObjectInfo(key: key, size: size, etag: etag)
    }

    /// CreateMultipartUpload, UploadPart for every part (`parallelParts` at a time), CompleteMultipartUpload
    /// with the parts' ETags, then a HEAD for the object's own ETag. Any failure aborts the upload, so no
    /// orphaned parts stay billed in the bucket.
    private func multipartUpload(_ key: String, file: OwnedDescriptor, size: UInt64, path: String) async throws(RemoteError) -> ObjectInfo {
        // S3 takes at most 10,000 parts: a file too large for that many parts of `partSize` gets larger ones.
        let partSize = max(self.partSize, (size + 9_999) / 10_000)
        let partCount = Int((size + partSize - 1) / partSize)
        let created = try await perform(.POST, path: objectPath(key), query: [("uploads", "")])
        guard created.status == .ok else { throw failure(created, "starting the upload of \(key)") }
        guard let uploadID = S3XML.parse(created.body)?.text("UploadId"), !uploadID.isEmpty else {
            throw RemoteError(.invalidResponse, "\(url): CreateMultipartUpload of \(key) answered no UploadId")
        }
        do {
            let slices = (0..<partCount).map { index in
                let offset = UInt64(index) * partSize
                return FileSlice(file: file, offset: offset, count: min(partSize, size - offset), path: path)
            }
            let etags = try await uploadParts(key, uploadID: uploadID, slices: slices)
            try await complete(key, uploadID: uploadID, etags: etags)
        } catch {
            // Not cancelled with the caller: the abort must still reach the server.
            let abort = Task { () -> Void in
                _ = try? await perform(.DELETE, path: objectPath(key), query: [("uploadId", uploadID)])
            }
            await abort.value
            throw error
        }
        guard let info = try await info(key) else {
            throw RemoteError(.invalidResponse, "\(url): \(key) is missing right after its multipart upload completed")
        }
        guard info.size == size else {
            throw RemoteError(.invalidResponse, "\(url): \(key) has \(info.size) bytes after its upload, not \(size)")
        }
        return info
    }

    /// Uploads the parts, at most `parallelParts` at a time; their ETags in part order.
    private func uploadParts(_ key: String, uploadID: String, slices: [FileSlice]) async throws(RemoteError) -> [String] {
        do {
            return try await withThrowingTaskGroup(of: (Int, String).self) { group in
                var etags = [String](repeating: "", count: slices.count)
                var next = 0
                while next < min(parallelParts, slices.count) {
                    let index = next
                    group.addTask { (index, try await uploadPart(key, uploadID: uploadID, number: index + 1, slice: slices[index])) }
                    next += 1
                }
                while let (index, etag) = try await group.next() {
                    etags[index] = etag
                    if next < slices.count {
                        let index = next
                        group.addTask { (index, try await uploadPart(key, uploadID: uploadID, number: index + 1, slice: slices[index])) }
                        next += 1
                    }
                }
                return etags
            }
        } catch let error as RemoteError {
            throw error
        } catch {
            throw RemoteError(.unreachable, "\(url): the upload of \(key) was interrupted: \(error)")
        }
    }

    /// UploadPart of one slice of the file; the part's ETag.
    private func uploadPart(_ key: String, uploadID: String, number: Int, slice: FileSlice) async throws(RemoteError) -> String {
        let hash = try slice.sha256()
        let response = try await perform(.PUT, path: objectPath(key), query: [("partNumber", String(number)), ("uploadId", uploadID)],
                                          payload: .file(slice, sha256: hash))
        guard response.status == .ok else { throw failure(response, "uploading part \(number) of \(key)") }
        guard let etag = response.headers.first(name: "ETag"), !etag.isEmpty else {
            throw RemoteError(.invalidResponse, "\(url): part \(number) of \(key) answered no ETag")
        }
        return etag
    }

    /// CompleteMultipartUpload. S3 may answer 200 and still fail, with an Error document as the body.
    private func complete(_ key: String, uploadID: String, etags: [String]) async throws(RemoteError) {
        var body = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for (index, etag) in etags.enumerated() {
            let escaped = etag.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;")
            body += "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(escaped)</ETag></Part>"
        }
        body += "</CompleteMultipartUpload>"
        // (AWS may take minutes to assemble a large object, sending spaces meanwhile; other servers send
        // nothing until it is done.)
        let response = try await perform(.POST, path: objectPath(key), query: [("uploadId", uploadID)], payload: .data(Data(body.utf8)),
                                         patience: .minutes(10))
        guard response.status == .ok else { throw failure(response, "completing the upload of \(key)") }
        // The root is CompleteMultipartUploadResult on AWS (…Response on moto): only an Error root is a failure.
        guard let document = S3XML.parse(response.body), document.name != "Error" else {
            let code = S3XML.parse(response.body)?.text("Code") ?? "an unreadable answer"
            throw RemoteError(code == "InternalError" || code == "SlowDown" ? .unreachable : .invalidResponse,
                              "\(url): completing the upload of \(key) failed (\(code))")
        }
    }
}
