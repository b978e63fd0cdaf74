import CVips
import Foundation

/// One reference to a libvips image, released when this object goes. Not shared between threads: each
/// processing run makes its own.
final class VipsImageRef {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        darkdisk_g_object_unref(pointer)
    }

    var width: Int { Int(darkdisk_vips_image_get_width(pointer)) }
    var height: Int { Int(darkdisk_vips_image_get_height(pointer)) }
    var bands: Int { Int(darkdisk_vips_image_get_bands(pointer)) }
    var hasAlpha: Bool { darkdisk_vips_image_hasalpha(pointer) != 0 }

    /// Runs one libvips operation that writes its result to `out`; a non-zero return is an error with
    /// libvips' message.
    static func make(_ what: String, code: ImageError.Code = .processing,
                     _ operation: (UnsafeMutablePointer<OpaquePointer?>) -> Int32) throws(ImageError) -> VipsImageRef {
        var out: OpaquePointer?
        let rc = operation(&out)
        guard rc == 0, let out else {
            if let out { darkdisk_g_object_unref(out) }
            throw ImageError(code, "\(what): \(LibVips.lastError())")
        }
        return VipsImageRef(out)
    }

    /// Encodes the image (this is when libvips actually decodes and computes the pixels).
    func encode(_ output: OutputFormat, code: ImageError.Code = .processing) throws(ImageError) -> Data {
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        let rc: Int32
        switch output.format {
        case .jpeg: rc = darkdisk_vips_jpegsave_buffer(pointer, &buffer, &length, Int32(output.quality))
        case .webp: rc = darkdisk_vips_webpsave_buffer(pointer, &buffer, &length, Int32(output.quality))
        default: rc = darkdisk_vips_pngsave_buffer(pointer, &buffer, &length, 6)
        }
        guard rc == 0, let buffer else {
            if let buffer { darkdisk_g_free(buffer) }
            throw ImageError(code, "cannot encode \(output.format) image: \(LibVips.lastError())")
        }
        defer { darkdisk_g_free(buffer) }
        return Data(bytes: buffer, count: length)
    }
}
