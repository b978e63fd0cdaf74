import Foundation

extension Run {
    /// From the output of `darkdisk status --json`: the bytes of partial downloads the store's index records
    /// (its data pool's `partialSize`), so a test can wait for a download's checkpoints before a `kill -9`.
    func partialDownloadBytes() throws -> Int {
        guard status == 0, let report = try JSONSerialization.jsonObject(with: stdout) as? [String: Any],
              let pools = report["pools"] as? [[String: Any]],
              let data = pools.first(where: { $0["name"] as? String == "data" }),
              let bytes = data["partialSize"] as? NSNumber else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "darkdisk status --json: \(output) \(stderr)"])
        }
        return bytes.intValue
    }
}
