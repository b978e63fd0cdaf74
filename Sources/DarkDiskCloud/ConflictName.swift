import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The name of a conflict copy: `NAME (conflict HOST YYYY-MM-DD HHMMSS).EXT`, in the machine's local time,
/// so a person sees which machine's change it is and when it was made, and the copy keeps its extension
/// (it opens with the same program). The original name is shortened (at a character boundary) so that the
/// whole stays a valid name of at most 255 bytes.
public enum ConflictName {
    public static func make(original: String, host: String, date: Date, timeZone: TimeZone = .current) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let stamp = String(format: "%04d-%02d-%02d %02d%02d%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0, c.second ?? 0)
        let safeHost = String(String(host.unicodeScalars.filter { $0 != "/" && $0 != "\0" }).utf8.prefix(64)) ?? "unknown"
        let suffix = " (conflict \(safeHost.isEmpty ? "unknown" : safeHost) \(stamp))"
        let name = String(original.unicodeScalars.filter { $0 != "\0" })
        // (A leading dot is a hidden file's, not an extension; an extension too long to keep goes with the name.)
        let dot = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 }
        var base = dot.map { String(name[..<$0]) } ?? name
        var ext = dot.map { String(name[$0...]) } ?? ""
        if ext.utf8.count + suffix.utf8.count > 64 { (base, ext) = (name, "") }
        while base.utf8.count + suffix.utf8.count + ext.utf8.count > 255, !base.isEmpty { base.removeLast() }
        return base + suffix + ext
    }

    /// This machine's name, for conflict copies made here.
    public static var localHost: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "unknown" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "unknown" : name
    }
}
