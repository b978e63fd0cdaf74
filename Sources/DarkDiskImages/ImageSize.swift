/// A size in pixels for processors and the command line (`64x64`).
public struct ImageSize: Hashable, Sendable, CustomStringConvertible {
    public let width: Int
    public let height: Int

    /// The largest side accepted: 16384 pixels.
    public static let maximumSide = 16384

    public init(width: Int, height: Int) throws(ImageError) {
        guard (1...Self.maximumSide).contains(width), (1...Self.maximumSide).contains(height) else {
            throw ImageError(.invalidArgument, "invalid size \(width)x\(height): each side must be 1 to \(Self.maximumSide) pixels")
        }
        self.width = width
        self.height = height
    }

    /// Parses `WxH` (for example `64x64`), or `N` for a square.
    public init(parsing text: String) throws(ImageError) {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let width = Int(parts[0]), let height = Int(parts.last!) else {
            throw ImageError(.invalidArgument, "invalid size '\(text)': expected WxH, for example 64x64")
        }
        try self.init(width: width, height: height)
    }

    public var description: String { "\(width)x\(height)" }
}
