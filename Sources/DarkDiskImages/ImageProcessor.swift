/// What a fetch does to the loaded image before caching and delivering it (ZeroDark.cloud's processingID and
/// processingBlock). It runs on the image manager's work queue, never on the caller's thread.
///
/// The `identifier` is part of the memory-cache key (ID + identifier), so it must name the result
/// exactly: two processors with one identifier must produce the same image. A nil identifier means the
/// result is not cached in memory (nor shared with other fetches).
public struct ImageProcessor: Sendable {
    public let identifier: String?
    private let body: @Sendable (ProcessedImage) throws -> ProcessedImage

    public init(identifier: String?, _ body: @escaping @Sendable (ProcessedImage) throws -> ProcessedImage) {
        self.identifier = identifier
        self.body = body
    }

    /// Runs the processor; an error it throws that is not an `ImageError` becomes `.processorFailed`.
    public func process(_ image: ProcessedImage) throws(ImageError) -> ProcessedImage {
        do {
            return try body(image)
        } catch let error as ImageError {
            throw error
        } catch {
            throw ImageError(.processorFailed, "the image processor '\(identifier ?? "(uncached)")' failed: \(error)")
        }
    }

    /// Scales to fit inside `size` keeping the aspect ratio; identifier `resize-64x64` (plus `-png`,
    /// `-jpeg85`... when `output` is given; without it the source's format is kept).
    public static func resize(toFit size: ImageSize, as output: OutputFormat? = nil) -> ImageProcessor {
        ImageProcessor(identifier: name("resize-\(size)", output)) { try $0.resized(toFit: size, as: output) }
    }

    /// Scales and centre-crops to exactly `size`; identifier `crop-64x64` (plus the output, as `resize`).
    public static func crop(toFill size: ImageSize, as output: OutputFormat? = nil) -> ImageProcessor {
        ImageProcessor(identifier: name("crop-\(size)", output)) { try $0.cropped(toFill: size, as: output) }
    }

    /// A round avatar `diameter` pixels wide, transparent outside the circle; identifier `circle-64`
    /// (plus `-webp80` for WebP).
    public static func circle(diameter: Int, as output: OutputFormat = .png) -> ImageProcessor {
        ImageProcessor(identifier: name("circle-\(diameter)", output == .png ? nil : output)) { try $0.circled(diameter: diameter, as: output) }
    }

    /// Re-encodes at the same size; identifier `encode-jpeg85`, `encode-png`, `encode-webp80`.
    public static func encode(as output: OutputFormat) -> ImageProcessor {
        ImageProcessor(identifier: "encode-\(output.identifier)") { try $0.encoded(as: output) }
    }

    private static func name(_ base: String, _ output: OutputFormat?) -> String {
        output.map { "\(base)-\($0.identifier)" } ?? base
    }
}
