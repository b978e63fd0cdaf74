import DarkDiskCloud
import DarkDiskSync
import Foundation

/// A real remote seen through a layer that steps in at the moments the tests stage: right before the first
/// conditional update of a record (another machine's write landing between a store's read of the record
/// and its own write), right after the first listing and the first read of a record (writes landing while
/// a pull lists, reads and applies what it read), right before the first upload of a file (a change made
/// while an upload runs), and when unfinished uploads are listed (refused, as S3 refuses
/// credentials without `s3:ListBucketMultipartUploads`). Everything else goes to `inner` unchanged.
final class InterceptingRemote: Remote, Sendable {
    let inner: any Remote
    private let beforeFirstRecordUpdate: (@Sendable () async throws -> Void)?
    private let afterFirstList: (@Sendable () async throws -> Void)?
    private let beforeFirstFileWrite: (@Sendable () async throws -> Void)?
    private let fileWriteDone = Locked(false)
    private let afterFirstRecordRead: (@Sendable () async throws -> Void)?
    private let unfinishedUploadsError: RemoteError?
    private let done = Locked(false)
    private let readDone = Locked(false)
    private let listDone = Locked(false)
    /// Whether `beforeFirstRecordUpdate` ran.
    var raced: Bool { done.withLock { $0 } }
    /// Whether `afterFirstRecordRead` ran.
    var recordWasRead: Bool { readDone.withLock { $0 } }

    init(_ inner: any Remote, beforeFirstRecordUpdate: (@Sendable () async throws -> Void)? = nil,
         afterFirstList: (@Sendable () async throws -> Void)? = nil, afterFirstRecordRead: (@Sendable () async throws -> Void)? = nil,
         beforeFirstFileWrite: (@Sendable () async throws -> Void)? = nil, unfinishedUploadsError: RemoteError? = nil) {
        self.inner = inner
        self.beforeFirstRecordUpdate = beforeFirstRecordUpdate
        self.afterFirstList = afterFirstList
        self.beforeFirstFileWrite = beforeFirstFileWrite
        self.afterFirstRecordRead = afterFirstRecordRead
        self.unfinishedUploadsError = unfinishedUploadsError
    }

    var url: String { inner.url }
    func list(prefix: String) async throws(RemoteError) -> [ObjectInfo] {
        let listed = try await inner.list(prefix: prefix)
        if let staged = afterFirstList, listDone.withLock({ let first = !$0; $0 = true; return first }) {
            do { try await staged() } catch { throw RemoteError(.io, "the staged write failed: \(error)") }
        }
        return listed
    }
    func info(_ key: String) async throws(RemoteError) -> ObjectInfo? { try await inner.info(key) }
    func read(_ key: String, range: Range<UInt64>, ifMatch etag: String?,
              consume: (UnsafeRawBufferPointer) throws(RemoteError) -> Void) async throws(RemoteError) {
        try await inner.read(key, range: range, ifMatch: etag, consume: consume)
        if let staged = afterFirstRecordRead, key.hasPrefix(CloudLayout.recordsPrefix),
           readDone.withLock({ let first = !$0; $0 = true; return first }) {
            do { try await staged() } catch { throw RemoteError(.io, "the staged write failed: \(error)") }
        }
    }
    func write(_ key: String, fromFile path: String) async throws(RemoteError) -> ObjectInfo {
        if let staged = beforeFirstFileWrite, fileWriteDone.withLock({ let first = !$0; $0 = true; return first }) {
            do { try await staged() } catch { throw RemoteError(.io, "the staged write failed: \(error)") }
        }
        return try await inner.write(key, fromFile: path)
    }
    func delete(_ key: String, condition: WriteCondition) async throws(RemoteError) { try await inner.delete(key, condition: condition) }

    func write(_ key: String, data: Data, condition: WriteCondition) async throws(RemoteError) -> ObjectInfo {
        if let race = beforeFirstRecordUpdate, key.hasPrefix(CloudLayout.recordsPrefix), case .matches = condition,
           done.withLock({ let first = !$0; $0 = true; return first }) {
            do { try await race() } catch { throw RemoteError(.io, "the staged write failed: \(error)") }
        }
        return try await inner.write(key, data: data, condition: condition)
    }

    func abortUnfinishedUploads(prefix: String, startedBefore date: Date) async throws(RemoteError) -> Int {
        if let unfinishedUploadsError { throw unfinishedUploadsError }
        return try await inner.abortUnfinishedUploads(prefix: prefix, startedBefore: date)
    }
}
