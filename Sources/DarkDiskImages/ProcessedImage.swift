import CVips
import Foundation

/// An image as the image manager delivers and caches it. Linux has no UIImage: this is the encoded bytes
/// (ready to write to a file, send, or hand to a viewer), their format and the size in pixels.
///
/// The operations (`resized(toFit:)`, `cropped(toFill:)`, `circled(diameter:)`, `encoded(as:)`) run libvips
/// synchronously on the calling thread; they are what the built-in processors use, and custom processors
/// may combine them.
public struct ProcessedImage: Sendable, Hashable {
    /// The encoded image.
    public let data: Data
    public let format: ImageFormat
    public let width: Int
    public let height: Int

    /// What the image costs in a memory cache: its encoded bytes.
    public var cost: Int { data.count }

    /// Wraps encoded image bytes, reading their header with libvips (pixels are not decoded). Bytes that
    /// are not an image libvips knows are an `.undecodable` error.
    public init(data: Data) throws(ImageError) {
        try LibVips.start()
        guard !data.isEmpty else { throw ImageError(.undecodable, "the image is empty (0 bytes)") }
        let header: (Int, Int, String?)? = data.withUnsafeBytes { buffer in
            guard let image = darkdisk_vips_load_buffer(buffer.baseAddress, buffer.count) else { return nil }
            defer { darkdisk_g_object_unref(image) }
            let loader = darkdisk_vips_foreign_find_load_buffer(buffer.baseAddress, buffer.count).map { String(cString: $0) }
            return (Int(darkdisk_vips_image_get_width(image)), Int(darkdisk_vips_image_get_height(image)), loader)
        }
        guard let (width, height, _) = header else {
            throw ImageError(.undecodable, "not a readable image (\(data.count) bytes): \(LibVips.lastError())")
        }
        self.init(data: data, format: ImageFormat.sniff(data) ?? .other, width: width, height: height)
    }

    init(data: Data, format: ImageFormat, width: Int, height: Int) {
        self.data = data
        self.format = format
        self.width = width
        self.height = height
    }

    /// The default output of an operation on this image: the same format if it is JPEG, PNG or WebP, else PNG.
    var naturalOutput: OutputFormat { .matching(format) }

    /// Scaled to fit inside `size`, keeping its aspect ratio (up or down). JPEG and WebP sources shrink
    /// while they load, so a large photo is never decoded at full size.
    public func resized(toFit size: ImageSize, as output: OutputFormat? = nil) throws(ImageError) -> ProcessedImage {
        try thumbnail(size, crop: false, output: output ?? naturalOutput)
    }

    /// Scaled and centre-cropped to exactly `size`.
    public func cropped(toFill size: ImageSize, as output: OutputFormat? = nil) throws(ImageError) -> ProcessedImage {
        try thumbnail(size, crop: true, output: output ?? naturalOutput)
    }

    /// Cropped to a `diameter` square and masked to a circle (antialiased edge; outside is transparent),
    /// for avatars. The output must keep alpha: PNG (the default) or WebP.
    public func circled(diameter: Int, as output: OutputFormat = .png) throws(ImageError) -> ProcessedImage {
        let size = try ImageSize(width: diameter, height: diameter)
        guard output.format != .jpeg else {
            throw ImageError(.invalidArgument, "a circular avatar needs transparency: encode it as png or webp, not jpeg")
        }
        return try withSource { source throws(ImageError) in
            let square = try source.thumbnail(size, crop: true)
            let rgb = try VipsImageRef.make("cannot convert to sRGB") { darkdisk_vips_colourspace_srgb(square.pointer, $0) }
            let eight = try VipsImageRef.make("cannot convert to 8 bits") { darkdisk_vips_cast_uchar(rgb.pointer, $0) }
            let mask = try Self.circleMask(diameter: diameter)
            let colour = try VipsImageRef.make("cannot take the colour bands") { darkdisk_vips_extract_bands(eight.pointer, $0, 0, 3) }
            var alpha = mask
            if eight.bands >= 4 {
                // Keep the source's own transparency inside the circle.
                let own = try VipsImageRef.make("cannot take the alpha band") { darkdisk_vips_extract_bands(eight.pointer, $0, 3, 1) }
                alpha = try VipsImageRef.make("cannot combine alpha with the mask") { darkdisk_vips_multiply_alpha(own.pointer, mask.pointer, $0) }
            }
            let masked = try VipsImageRef.make("cannot apply the circle mask") { darkdisk_vips_bandjoin2(colour.pointer, alpha.pointer, $0) }
            return ProcessedImage(data: try masked.encode(output, code: .undecodable), format: output.format, width: masked.width, height: masked.height)
        }
    }

    /// Re-encoded at its own size (to change format or quality).
    public func encoded(as output: OutputFormat) throws(ImageError) -> ProcessedImage {
        try thumbnail(try ImageSize(width: min(width, ImageSize.maximumSide), height: min(height, ImageSize.maximumSide)),
                      crop: false, output: output)
    }

    private func thumbnail(_ size: ImageSize, crop: Bool, output: OutputFormat) throws(ImageError) -> ProcessedImage {
        try withSource { source throws(ImageError) in
            let image = try source.thumbnail(size, crop: crop)
            // Pixels are computed (and a damaged file found) while encoding.
            return ProcessedImage(data: try image.encode(output, code: .undecodable), format: output.format, width: image.width, height: image.height)
        }
    }

    /// Runs `body` with this image's bytes pinned for libvips (which reads them lazily, until encoding ends).
    private func withSource<T>(_ body: (Source) throws(ImageError) -> T) throws(ImageError) -> T {
        try LibVips.start()
        let result: Result<T, ImageError> = data.withUnsafeBytes { buffer in
            do throws(ImageError) { return .success(try body(Source(buffer: buffer))) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// The encoded bytes of the image being processed.
    private struct Source {
        let buffer: UnsafeRawBufferPointer

        func thumbnail(_ size: ImageSize, crop: Bool) throws(ImageError) -> VipsImageRef {
            try VipsImageRef.make("cannot decode the image", code: .undecodable) {
                darkdisk_vips_thumbnail_buffer(buffer.baseAddress, buffer.count, $0, Int32(size.width), Int32(size.height), crop ? 1 : 0, 1)
            }
        }
    }

    /// A one-band 8-bit mask: 255 inside a circle filling the square, 0 outside, the edge antialiased.
    private static func circleMask(diameter: Int) throws(ImageError) -> VipsImageRef {
        var pixels = [UInt8](repeating: 0, count: diameter * diameter)
        let radius = Double(diameter) / 2
        for y in 0..<diameter {
            let dy = Double(y) + 0.5 - radius
            for x in 0..<diameter {
                let dx = Double(x) + 0.5 - radius
                let coverage = min(1, max(0, radius - (dx * dx + dy * dy).squareRoot() + 0.5))
                pixels[y * diameter + x] = UInt8((coverage * 255).rounded())
            }
        }
        let image = pixels.withUnsafeBytes { bytes in
            darkdisk_vips_image_new_from_memory_uchar(bytes.baseAddress, bytes.count, Int32(diameter), Int32(diameter), 1)
        }
        guard let image else { throw ImageError(.processing, "cannot make a circle mask: \(LibVips.lastError())") }
        return VipsImageRef(image)
    }
}
