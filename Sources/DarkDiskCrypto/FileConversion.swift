import DarkDiskSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Whole-file conversions between plaintext and the encrypted formats. Output files are created with
/// mode 0600 (replacing any old file) and removed again if anything fails; nothing is fsynced.
public enum FileConversion {
    /// Bytes moved per read or write when streaming.
    static let blockSize = 1 << 20

    /// Encrypts `data` into a new file at `path`. For `.cloudFile`, `data` becomes the data section and
    /// the metadata and thumbnail sections are empty.
    public static func encrypt(_ data: Data, key: SymmetricKey, format: CryptoFileFormat = .cacheFile, to path: String,
                               chunkSize: UInt32 = CryptoFormat.defaultChunkSize) throws(CryptoError) -> CryptoFileHeader {
        try writeFile(at: path, key: key, format: format, chunkSize: chunkSize) { writer throws(CryptoError) in
            for _ in 0..<format.dataSection {
                try writer.endSection()
            }
            try writer.append(data)
        }
    }

    /// Encrypts the file at `source` into a new file at `path` (a cache file; a cloud file, its metadata and
    /// thumbnail sections empty, with `format` `.cloudFile`), reading 1 MiB at a time.
    /// With `limit`, more plaintext than `limit` bytes stops it with `.outOfRange`.
    public static func encrypt(fileAt source: String, key: SymmetricKey, format: CryptoFileFormat = .cacheFile, to path: String,
                               chunkSize: UInt32 = CryptoFormat.defaultChunkSize, limit: UInt64? = nil) throws(CryptoError) -> CryptoFileHeader {
        let input = try POSIXIO.openForReading(source)
        return try writeFile(at: path, key: key, format: format, chunkSize: chunkSize) { writer throws(CryptoError) in
            for _ in 0..<format.dataSection { try writer.endSection() }
            try copyStream(input.rawValue, name: source, into: writer, limit: limit)
        }
    }

    /// Encrypts everything readable from `source` (a pipe, stdin: any stream of unknown length, read until
    /// end of file) into a new file at `path` (a cache file, or a cloud file with `format`). Does not close
    /// `source`. `name` is what messages call the stream; with `limit`, more plaintext than `limit` bytes
    /// stops it with `.outOfRange`.
    public static func encrypt(fileDescriptor source: Int32, key: SymmetricKey, format: CryptoFileFormat = .cacheFile, to path: String,
                               chunkSize: UInt32 = CryptoFormat.defaultChunkSize, name: String? = nil,
                               limit: UInt64? = nil) throws(CryptoError) -> CryptoFileHeader {
        try writeFile(at: path, key: key, format: format, chunkSize: chunkSize) { writer throws(CryptoError) in
            for _ in 0..<format.dataSection { try writer.endSection() }
            try copyStream(source, name: name ?? (source == 0 ? "standard input" : "the input stream"), into: writer, limit: limit)
        }
    }

    /// Writes a cloud file at `path`: `metadata` and `thumbnail` (empty sections when nil) followed by the
    /// content of the file at `dataFileAt`.
    public static func encryptCloudFile(metadata: Data?, thumbnail: Data?, dataFileAt: String, key: SymmetricKey, to path: String,
                                        chunkSize: UInt32 = CryptoFormat.defaultChunkSize) throws(CryptoError) -> CryptoFileHeader {
        let input = try POSIXIO.openForReading(dataFileAt)
        return try writeFile(at: path, key: key, format: .cloudFile, chunkSize: chunkSize) { writer throws(CryptoError) in
            if let metadata { try writer.append(metadata) }
            try writer.endSection()
            if let thumbnail { try writer.append(thumbnail) }
            try writer.endSection()
            try copyStream(input.rawValue, name: dataFileAt, into: writer)
        }
    }

    /// `encryptCloudFile` whose data section is the data section of another encrypted file, re-encrypted a
    /// MiB at a time under `key` (the plaintext is only ever in memory): how an upload composes a cloud file
    /// from the files a store holds.
    public static func encryptCloudFile(metadata: Data?, thumbnail: Data?, dataFrom source: CryptoFileReader, key: SymmetricKey,
                                        to path: String, chunkSize: UInt32 = CryptoFormat.defaultChunkSize) throws(CryptoError) -> CryptoFileHeader {
        try writeFile(at: path, key: key, format: .cloudFile, chunkSize: chunkSize) { writer throws(CryptoError) in
            if let metadata { try writer.append(metadata) }
            try writer.endSection()
            if let thumbnail { try writer.append(thumbnail) }
            try writer.endSection()
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: blockSize, alignment: 16)
            defer { buffer.deallocate() }
            let section = source.dataSection
            let size = source.plaintextSize(ofSection: section)
            var offset: UInt64 = 0
            while offset < size {
                let count = try source.read(section: section, offset: offset, count: blockSize, into: buffer)
                guard count > 0 else { throw CryptoError(.truncated, "the data of the file being uploaded ends at \(offset) of \(size) bytes") }
                try writer.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                offset += UInt64(count)
            }
        }
    }

    /// Decrypts `section` (`nil`: the data section) of the file at `path` into memory.
    public static func decryptIntoMemory(path: String, key: SymmetricKey, section: Int? = nil) throws(CryptoError) -> Data {
        let reader = try CryptoFileReader(path: path, key: key)
        let section = section ?? reader.dataSection
        guard section >= 0 && section < reader.header.format.sectionCount else {
            throw CryptoError(.outOfRange, "\(path) has no section \(section)")
        }
        let size = reader.plaintextSize(ofSection: section)
        guard size <= UInt64(Int.max) else {
            throw CryptoError(.outOfRange, "section \(section) of \(path) is too large for memory")
        }
        var plaintext = Data(capacity: Int(size))
        var offset: UInt64 = 0
        while offset < size {
            let block = try reader.readData(section: section, offset: offset, count: blockSize)
            plaintext.append(block)
            offset += UInt64(block.count)
        }
        return plaintext
    }

    /// Decrypts `section` (`nil`: the data section) of the file at `path` into a new file at `output`.
    public static func decrypt(path: String, key: SymmetricKey, section: Int? = nil, toFileAt output: String) throws(CryptoError) {
        let reader = try CryptoFileReader(path: path, key: key)
        let section = section ?? reader.dataSection
        guard section >= 0 && section < reader.header.format.sectionCount else {
            throw CryptoError(.outOfRange, "\(path) has no section \(section)")
        }
        let file = try POSIXIO.createFile(output)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: blockSize, alignment: 16)
        defer { buffer.deallocate() }
        do {
            let size = reader.plaintextSize(ofSection: section)
            var offset: UInt64 = 0
            while offset < size {
                let count = try reader.read(section: section, offset: offset, count: blockSize, into: buffer)
                try POSIXIO.write(file.rawValue, from: buffer.baseAddress!, count: count, name: output)
                offset += UInt64(count)
            }
            try POSIXIO.closeWritten(file, name: output)
        } catch {
            try? file.close()  // (closed already if closing was what failed)
            unlink(output)
            throw error
        }
    }

    /// Creates `path`, lets `body` fill a writer for it, finishes and closes it; removes the file on failure.
    private static func writeFile(at path: String, key: SymmetricKey, format: CryptoFileFormat, chunkSize: UInt32,
                                  body: (CryptoFileWriter) throws(CryptoError) -> Void) throws(CryptoError) -> CryptoFileHeader {
        let file = try POSIXIO.createFile(path)
        do {
            let writer = try CryptoFileWriter(fileDescriptor: file.rawValue, key: key, format: format, chunkSize: chunkSize, name: FileName(path: path))
            try body(writer)
            let header = try writer.finish()
            try POSIXIO.closeWritten(file, name: path)
            return header
        } catch {
            try? file.close()  // (closed already if closing was what failed)
            unlink(path)
            throw error
        }
    }

    /// Appends everything readable from `fd` until end of file to the writer's current section.
    private static func copyStream(_ fd: Int32, name: String, into writer: CryptoFileWriter, limit: UInt64? = nil) throws(CryptoError) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: blockSize, alignment: 16)
        defer { buffer.deallocate() }
        var total: UInt64 = 0
        while true {
            let count = try POSIXIO.read(fd, into: buffer.baseAddress!, count: buffer.count, name: name)
            if count == 0 { return }
            total += UInt64(count)
            if let limit, total > limit { throw CryptoError(.outOfRange, "\(name) holds more than \(limit) bytes") }
            try writer.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
    }
}
