import Foundation

/// The default avatars, read from the package's resources once.
enum DefaultAvatars {
    static let user = load("default-user-avatar")
    static let multiUser = load("default-multi-user-avatar")

    private static func load(_ name: String) -> Result<ProcessedImage, ImageError> {
        guard let url = Bundle.module.url(forResource: name, withExtension: "png", subdirectory: "Resources"),
              let data = try? Data(contentsOf: url) else {
            return .failure(ImageError(.notAvailable, "the resource \(name).png is missing from the DarkDiskImages bundle"))
        }
        do throws(ImageError) { return .success(try ProcessedImage(data: data)) } catch { return .failure(error) }
    }
}
