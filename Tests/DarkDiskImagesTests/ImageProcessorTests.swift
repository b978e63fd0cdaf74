@testable import DarkDiskImages
import Foundation
import Testing

/// The libvips-backed processors on real JPEG, PNG and WebP images.
@Suite struct ImageProcessorTests {
    @Test func resizeCropEncodeKeepOrChangeTheFormat() throws {
        let photo = try ProcessedImage(data: TestImages.jpeg(400, 300))
        #expect(photo.format == .jpeg && photo.width == 400 && photo.height == 300)

        let fit = ImageProcessor.resize(toFit: try ImageSize(width: 64, height: 64))
        #expect(fit.identifier == "resize-64x64")
        let small = try fit.process(photo)
        #expect(small.format == .jpeg && small.width == 64 && small.height == 48, "aspect kept: \(small.width)x\(small.height)")
        #expect(try ProcessedImage(data: small.data) == small, "the bytes are what they claim")

        let fill = ImageProcessor.crop(toFill: try ImageSize(parsing: "32x32"), as: .webp())
        #expect(fill.identifier == "crop-32x32-webp80")
        let square = try fill.process(photo)
        #expect(square.format == .webp && square.width == 32 && square.height == 32)
        #expect(ImageFormat.sniff(square.data) == .webp)

        let png = try ProcessedImage(data: TestImages.png(50, 80))
        let asJPEG = try ImageProcessor.encode(as: .jpeg(quality: 90)).process(png)
        #expect(asJPEG.format == .jpeg && asJPEG.width == 50 && asJPEG.height == 80)
        #expect(ImageProcessor.encode(as: .png).identifier == "encode-png")
        #expect(try ImageProcessor.resize(toFit: ImageSize(width: 20, height: 20)).process(png).format == .png, "PNG stays PNG")
    }

    @Test func circleIsTransparentOutside() throws {
        let photo = try ProcessedImage(data: TestImages.jpeg(300, 200))
        let round = ImageProcessor.circle(diameter: 48)
        #expect(round.identifier == "circle-48")
        let avatar = try round.process(photo)
        #expect(avatar.format == .png && avatar.width == 48 && avatar.height == 48)
        let (bands, width, bytes) = try TestImages.pixels(avatar.data)
        #expect(bands == 4)
        func alpha(_ x: Int, _ y: Int) -> UInt8 { bytes[(y * width + x) * bands + 3] }
        #expect(alpha(0, 0) == 0 && alpha(47, 47) == 0 && alpha(0, 47) == 0, "corners are transparent")
        #expect(alpha(24, 24) == 255 && alpha(24, 2) == 255, "the inside is opaque")
        #expect(ImageProcessor.circle(diameter: 40, as: .webp()).identifier == "circle-40-webp80")
        #expect(throws: ImageError.self) { try photo.circled(diameter: 40, as: .jpeg()) }
    }

    @Test func corruptImagesAreErrorsNotCrashes() throws {
        let garbage = Data("this is not an image at all".utf8)
        do {
            _ = try ProcessedImage(data: garbage)
            Issue.record("garbage was decoded")
        } catch { #expect(error.code == .undecodable) }
        #expect(throws: ImageError.self) { try ProcessedImage(data: Data()) }

        // A JPEG cut in half still has a header; decoding its pixels fails.
        let full = try TestImages.jpeg(640, 480, seed: 9)
        let truncated = try ProcessedImage(data: full.prefix(full.count / 2))
        #expect(truncated.width == 640)
        do {
            _ = try ImageProcessor.resize(toFit: ImageSize(width: 64, height: 64)).process(truncated)
            Issue.record("a truncated JPEG was processed")
        } catch { #expect(error.code == .undecodable, "\(error)") }
        // A PNG with its pixel data damaged.
        var png = try TestImages.png(200, 200, seed: 3)
        for i in stride(from: 100, to: png.count - 20, by: 7) { png[i] ^= 0x5A }
        #expect(throws: ImageError.self) { try ProcessedImage(data: png).resized(toFit: ImageSize(width: 10, height: 10)) }
    }

    @Test func sizesAndFormatsParseWithOneLineErrors() throws {
        #expect(try ImageSize(parsing: "64x48") == ImageSize(width: 64, height: 48))
        #expect(try ImageSize(parsing: "128") == ImageSize(width: 128, height: 128))
        for bad in ["", "x", "0x10", "10x", "-5x5", "axb", "99999x1", "1x2x3"] {
            #expect(throws: ImageError.self, "\(bad)") { try ImageSize(parsing: bad) }
        }
        #expect(try OutputFormat(parsing: "jpg") == .jpeg())
        #expect(try OutputFormat(parsing: "webp90") == .webp(quality: 90))
        #expect(throws: ImageError.self) { try OutputFormat(parsing: "gif") }
        #expect(throws: ImageError.self) { try OutputFormat(parsing: "png5") }
    }

    @Test func defaultAvatarsShipAsResources() throws {
        let single = try ImageManager.defaultUserAvatar()
        let multi = try ImageManager.defaultMultiUserAvatar()
        #expect(single.format == .png && single.width == 128 && single.height == 128)
        #expect(multi.format == .png && multi.width == 128 && multi.data != single.data)
        #expect(try ImageProcessor.circle(diameter: 32).process(multi).width == 32)
    }
}
