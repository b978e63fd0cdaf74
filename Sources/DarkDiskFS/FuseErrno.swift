import DarkDisk
import DarkDiskCrypto
#if canImport(Glibc)
import Glibc
#endif

/// The one place where errors become the errno the kernel hands to `cat`, `cp` and friends.
enum FuseErrno {
    static func from(_ error: any Error) -> Int32 {
        switch error {
        case let error as DarkDiskError:
            switch error.code {
            case .invalidID, .notFound: return ENOENT
            case .invalidArgument: return EINVAL
            case .corrupt: return EIO
            case .io: return error.errno ?? EIO
            case .database, .storeNotFound, .storeExists, .keyFile, .passphraseRequired, .wrongPassphrase: return EIO
            }
        case let error as CryptoError:
            switch error.code {
            case .io: return error.errno ?? EIO
            case .outOfRange: return EINVAL
            default: return EIO
            }
        default:
            return EIO
        }
    }
}
