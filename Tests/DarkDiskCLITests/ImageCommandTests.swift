import DarkDiskStore
import DarkDiskTestTraits
import Foundation
import Testing

/// `darkdisk thumbnail` and `darkdisk avatar`, with real images made and checked by libvips' own tools
/// (`vips`, `vipsheader` from libvips-tools).
@Suite(.processSlots) struct ImageCommandTests {
    /// A JPEG or PNG of `width` x `height` made by the `vips` command line.
    func picture(_ store: CLIStore, _ name: String, _ width: Int, _ height: Int) throws -> String {
        let raw = store.directory + "/" + name + ".v"
        let path = store.directory + "/" + name
        #expect(try Shell.run("/usr/bin/vips", ["gaussnoise", raw, "\(width)", "\(height)"]).status == 0)
        let cast = try Shell.run("/usr/bin/vips", ["cast", raw, path, "uchar"])
        #expect(cast.status == 0, "\(cast.stderr)")
        return path
    }

    /// `vipsheader`'s description of an image file: "WxH uchar, N bands, srgb, pngload".
    func header(_ path: String) throws -> String {
        let run = try Shell.run("/usr/bin/vipsheader", [path])
        #expect(run.status == 0, "\(run.stderr)")
        return run.output.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
    }

    @Test func thumbnailAsStoredOrResized() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["init"]).status == 0)
        let photo = try picture(store, "photo.jpg", 800, 600)
        await #expect(try store.darkdisk(["import", photo, "--node", "pic", "--kind", "thumbnail"]).status == 0)

        let asStored = try await store.darkdisk(["thumbnail", "--node", "pic"])
        let original = try Data(contentsOf: URL(fileURLWithPath: photo))
        #expect(asStored.status == 0 && asStored.stdout == original, "\(asStored.stderr)")

        let out = store.directory + "/small.jpg"
        let small = try await store.darkdisk(["thumbnail", "--node", "pic", "--size", "64x64", "-o", out])
        #expect(small.status == 0 && small.stdout.isEmpty, "\(small.stderr)")
        let smallHeader = try header(out)
        #expect(smallHeader.hasPrefix("64x48 uchar"), "\(smallHeader)")

        let webp = store.directory + "/small.webp"
        await #expect(try store.darkdisk(["thumbnail", "--node", "pic", "--size", "100x100", "--format", "webp", "-o", webp]).status == 0)
        #expect(try header(webp).contains("webpload") && header(webp).hasPrefix("100x75"))

        await expectOneLineFailure(try store.darkdisk(["thumbnail", "--node", "pic", "--size", "64by64"]), mentioning: "WxH")
        await expectOneLineFailure(try store.darkdisk(["thumbnail", "--node", "pic", "--format", "bmp"]), mentioning: "jpeg, png or webp")
        await #expect(try store.darkdisk(["import", try store.file("d", Data("plain".utf8)), "--node", "plain"]).status == 0)
        await expectOneLineFailure(try store.darkdisk(["thumbnail", "--node", "plain"]), mentioning: "has no thumbnail")
        await expectOneLineFailure(try store.darkdisk(["thumbnail", "--node", "ghost"]), mentioning: "ghost")
        let junk = try store.file("junk", Data(repeating: 0x42, count: 3000))
        await #expect(try store.darkdisk(["import", junk, "--node", "junk", "--kind", "thumbnail"]).status == 0)
        await expectOneLineFailure(try store.darkdisk(["thumbnail", "--node", "junk", "--size", "10x10"]), mentioning: "image")
    }

    @Test func avatarsCroppedRoundOrDefault() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["init"]).status == 0)
        let face = try picture(store, "face.png", 300, 200)
        let push = try await store.darkdisk(["push", face, "--user", "carol", "--identity", "auth0|c@x.org", "--display"])
        #expect(push.status == 0, "\(push.stderr)")

        let plain = try await store.darkdisk(["avatar", "--user", "carol"])
        let faceBytes = try Data(contentsOf: URL(fileURLWithPath: face))
        #expect(plain.status == 0 && plain.stdout == faceBytes, "\(plain.stderr)")

        let round = store.directory + "/round.png"
        let circle = try await store.darkdisk(["avatar", "--user", "carol", "--identity", "auth0|c@x.org", "--size", "48x48", "--circle", "-o", round])
        #expect(circle.status == 0, "\(circle.stderr)")
        let roundHeader = try header(round)
        #expect(roundHeader.hasPrefix("48x48 uchar, 4 bands"), "\(roundHeader)")

        let cropped = store.directory + "/crop.jpg"
        await #expect(try store.darkdisk(["avatar", "--user", "carol", "--size", "40x30", "--format", "jpeg", "-o", cropped]).status == 0)
        let croppedHeader = try header(cropped)
        #expect(croppedHeader.hasPrefix("40x30 uchar") && croppedHeader.hasSuffix("jpegload"), "\(croppedHeader)")

        await expectOneLineFailure(try store.darkdisk(["avatar", "--user", "carol", "--size", "40x30", "--circle"]), mentioning: "square")
        await expectOneLineFailure(try store.darkdisk(["avatar", "--user", "dave"]), mentioning: "dave")
        let fallback = store.directory + "/default.png"
        await #expect(try store.darkdisk(["avatar", "--user", "dave", "--or-default", "--size", "32x32", "--circle", "-o", fallback]).status == 0)
        #expect(try header(fallback).hasPrefix("32x32 uchar, 4 bands"))
    }

    /// libvips and its hundred libraries (about 23 MiB resident) are loaded by the image commands only, not
    /// by every command and the mount daemon (the memory goal).
    @Test func theCommandLineDoesNotLinkLibvips() async throws {
        let libraries = try await Shell.run("/usr/bin/ldd", [Shell.darkdisk])
        #expect(libraries.status == 0 && libraries.output.contains("libc.so"), "\(libraries.stderr)")
        #expect(!libraries.output.contains("libvips") && !libraries.output.contains("libglib"), "\(libraries.output)")
    }

    /// Without libvips, image commands fail with one line that says what to install; the rest works.
    @Test func withoutLibvipsImageCommandsSayWhatIsMissing() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["init"]).status == 0)
        let photo = try picture(store, "photo.png", 80, 60)
        await #expect(try store.darkdisk(["import", photo, "--node", "pic", "--kind", "thumbnail"]).status == 0)
        let missing = ["DARKDISK_LIBVIPS": "/nonexistent/libvips.so.42"]
        let resized = try await store.darkdisk(["thumbnail", "--node", "pic", "--size", "32x32"], environment: missing)
        expectOneLineFailure(resized, mentioning: "libvips is not installed (Debian package libvips42)")
        let avatar = try await store.darkdisk(["avatar", "--user", "dave", "--or-default"], environment: missing)
        expectOneLineFailure(avatar, mentioning: "libvips is not installed")
        await #expect(try store.darkdisk(["status"], environment: missing).status == 0)
    }

    @Test func helpListsTheImageCommands() async throws {
        let help = try await Shell.run(Shell.darkdisk, ["--help"])
        #expect(help.output.contains("thumbnail") && help.output.contains("avatar"), "\(help.output)")
    }
}
