import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The name of a conflict copy (DESIGN §4): `NAME (conflict HOST YYYY-MM-DD HHMMSS)`, in the machine's
/// local time, so a person sees which machine's change it is and when it was made. The original name is
/// shortened (at a character boundary) so that the whole stays a valid name of at most 255 bytes.
public enum ConflictName {
    public static func make(original: String, host: String, date: Date, timeZone: TimeZone = .current) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let stamp = String(format: "%04d-%02d-%02d %02d%02d%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0, c.second ?? 0)
        let safeHost = String(String(host.unicodeScalars.filter { $0 != "/" && $0 != "\0" }).utf8.prefix(64)) ?? "unknown"
        let suffix = " (conflict \(safeHost.isEmpty ? "unknown" : safeHost) \(stamp))"
        var name = String(original.unicodeScalars.filter { $0 != "\0" })
        while name.utf8.count + suffix.utf8.count > 255 { name.removeLast() }
        return name + suffix
    }

    /// This machine's name, for conflict copies made here.
    public static var localHost: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "unknown" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "unknown" : name
    }
}
