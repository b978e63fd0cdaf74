import DarkDiskCloud
import Foundation

extension FuzzTarget {
    /// Every listed key must lie strictly under the prefix asked for, so a hostile listing cannot name
    /// objects outside the remote's folder.
    static func s3xml(_ input: [UInt8]) {
        let body = Data(input)
        _ = S3XML.parse(body)?.text("Code")
        guard let page = try? S3ListPage(body, keyPrefix: "prefix/", remote: "s3://fuzz/prefix") else { return }
        for object in page.objects where object.key.isEmpty {
            fatalError("s3xml: a listing gave an empty key")
        }
    }
}
