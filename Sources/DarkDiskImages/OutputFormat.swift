/// How a processor encodes its result: JPEG or WebP at a quality (1...100), or PNG (lossless, keeps alpha).
public struct OutputFormat: Hashable, Sendable, CustomStringConvertible {
    public let format: ImageFormat
    /// JPEG and WebP quality, 1...100; 0 for PNG.
    public let quality: Int

    private init(format: ImageFormat, quality: Int) {
        self.format = format
        self.quality = quality
    }

    public static func jpeg(quality: Int = 85) -> OutputFormat { OutputFormat(format: .jpeg, quality: min(100, max(1, quality))) }
    public static let png = OutputFormat(format: .png, quality: 0)
    public static func webp(quality: Int = 80) -> OutputFormat { OutputFormat(format: .webp, quality: min(100, max(1, quality))) }

    /// The output for `format`: JPEG and WebP at their default quality, PNG for anything else.
    public static func matching(_ format: ImageFormat) -> OutputFormat {
        format == .jpeg ? .jpeg() : format == .webp ? .webp() : .png
    }

    /// Part of processor identifiers: `jpeg85`, `png`, `webp80`.
    public var identifier: String { quality > 0 ? "\(format.rawValue)\(quality)" : format.rawValue }

    public var description: String { identifier }

    /// Parses `jpeg`, `jpg`, `png`, `webp`, optionally followed by a quality (`jpeg90`).
    public init(parsing text: String) throws(ImageError) {
        let lower = text.lowercased()
        let name = String(lower.prefix { $0.isLetter })
        let digits = lower.dropFirst(name.count)
        var quality: Int?
        if !digits.isEmpty {
            guard let q = Int(digits), (1...100).contains(q) else {
                throw ImageError(.invalidArgument, "invalid image format '\(text)': the quality must be 1 to 100")
            }
            quality = q
        }
        switch name {
        case "jpeg", "jpg": self = .jpeg(quality: quality ?? 85)
        case "webp": self = .webp(quality: quality ?? 80)
        case "png" where quality == nil: self = .png
        default: throw ImageError(.invalidArgument, "invalid image format '\(text)': use jpeg, png or webp")
        }
    }
}
