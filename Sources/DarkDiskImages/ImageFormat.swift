/// The encoding of an image's bytes, recognised by its signature.
public struct ImageFormat: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public static let jpeg = ImageFormat(rawValue: "jpeg")
    public static let png = ImageFormat(rawValue: "png")
    public static let webp = ImageFormat(rawValue: "webp")
    public static let gif = ImageFormat(rawValue: "gif")
    public static let tiff = ImageFormat(rawValue: "tiff")
    public static let heif = ImageFormat(rawValue: "heif")
    /// Anything else libvips can decode (SVG, PDF, ...).
    public static let other = ImageFormat(rawValue: "other")

    public var description: String { rawValue }

    /// The usual file-name extension (`jpg`, `png`, `webp`, ...).
    public var fileExtension: String { self == .jpeg ? "jpg" : rawValue }

    /// The format of encoded bytes by their first bytes, or nil if no known signature matches.
    public static func sniff<Bytes: Collection>(_ bytes: Bytes) -> ImageFormat? where Bytes.Element == UInt8 {
        let head = Array(bytes.prefix(12))
        func starts(_ signature: [UInt8], at offset: Int = 0) -> Bool {
            head.count >= offset + signature.count && Array(head[offset..<offset + signature.count]) == signature
        }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return .webp }
        if starts(Array("GIF8".utf8)) { return .gif }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        if starts(Array("ftyp".utf8), at: 4) { return .heif }
        return nil
    }
}
