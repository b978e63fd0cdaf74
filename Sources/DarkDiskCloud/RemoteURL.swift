import Foundation

/// Turns a remote URL into a remote: `file:///absolute/path` and `http(s)://host[:port]/prefix` (read-only).
/// `s3://` (DESIGN §4) comes with the rest of issue 4.
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
        case "http", "https":
            guard let host = url.host, !host.isEmpty else { throw RemoteError(.invalidURL, "an http remote needs a host: http://host[:port]/prefix") }
            return HTTPRemote(url: text)
        case "s3":
            throw RemoteError(.invalidURL, "s3:// remotes are not available in this version (use file:///path or http://host/prefix)")
        default:
            throw RemoteError(.invalidURL, "unknown remote scheme '\(scheme)' in '\(text)' (use file:///path or http://host/prefix)")
        }
    }
}
