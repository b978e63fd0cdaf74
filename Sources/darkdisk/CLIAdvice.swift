import DarkDiskStore
import DarkDiskCloud
import DarkDiskSystem
#if canImport(Glibc)
import Glibc
#endif

/// What to do next, in the command line's terms: the library's errors say what went wrong in its own terms
/// (a passphrase is needed, no store is there, the disk is full); the CLI adds the flag or command that helps.
enum CLIAdvice {
    static func message(for error: any DarkDiskFailure) -> String {
        guard let advice = advice(for: error) else { return error.message }
        return error.message + advice
    }

    private static func advice(for error: any DarkDiskFailure) -> String? {
        switch error {
        case let error as DarkDiskError:
            switch error.code {
            case .passphraseRequired: return " (pass --passphrase-file FILE, or set DARKDISK_PASSPHRASE_FILE)"
            case .storeNotFound: return "; run 'darkdisk init' first"
            case .io where error.errno == ENOSPC, .database where error.errno == ENOSPC:
                return " (free some, or delete files with 'darkdisk delete')"
            default: return nil
            }
        case let error as RemoteError where error.code == .unknownNode:
            return " (run 'darkdisk pull')"
        case let error as RemoteError where error.code == .emptyListing:
            return ". If every node was deleted on purpose, pull with --accept-empty-remote"
        default:
            return nil
        }
    }
}
