import Foundation

/// Turns a remote URL into a remote. This version speaks `file:///absolute/path`; `http(s)://` and
/// `s3://` are named in DESIGN §4 and come with the rest of issue 4.
public enum RemoteURL {
    public static func remote(_ text: String) throws(RemoteError) -> any Remote {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else {
            throw RemoteError(.invalidURL, "invalid remote URL '\(text)'")
        }
        switch scheme {
        case "file":
            let path = url.path
            guard path.hasPrefix("/"), url.host == nil || url.host == "" || url.host == "localhost" else {
                throw RemoteError(.invalidURL, "a file remote needs an absolute path: file:///path/to/folder")
            }
            return FileRemote(root: URL(fileURLWithPath: path).standardizedFileURL.path)
        case "http", "https", "s3":
            throw RemoteError(.invalidURL, "\(scheme):// remotes are not available in this version (use file:///path)")
        default:
            throw RemoteError(.invalidURL, "unknown remote scheme '\(scheme)' in '\(text)' (use file:///path)")
        }
    }
}
