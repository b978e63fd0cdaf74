/// darkdisk's version, in one place: `darkdisk --version` prints it (and the package and man pages will).
enum DarkdiskVersion {
    static let current = "0.15.0"
}
