import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskSystem
#if canImport(Glibc)
import Glibc
#endif

/// The one place where errors become the errno the kernel hands to `cat`, `cp` and friends.
package enum VFSErrno {
    package static func from(_ error: any Error) -> Int32 {
        switch error {
        case let error as DarkDiskError:
            switch error.code {
            case .invalidID, .notFound: return ENOENT
            case .invalidArgument: return EINVAL
            case .tooLarge: return EFBIG
            case .exists: return EEXIST
            case .notEmpty: return ENOTEMPTY
            case .notDirectory: return ENOTDIR
            case .isDirectory: return EISDIR
            case .notPermitted: return EPERM
            case .nameTooLong: return ENAMETOOLONG
            case .busy: return EBUSY
            case .corrupt: return EIO
            case .io: return error.errno ?? EIO
            case .database, .storeNotFound, .storeExists, .keyFile, .passphraseRequired, .wrongPassphrase: return EIO
            }
        case let error as ExtendedAttribute.Failure:
            switch error.code {
            case .noSuchAttribute: return ENODATA
            case .invalidValue, .unsupportedFlags: return EINVAL
            // EPERM, as Linux answers writes to attributes nobody may change (immutable files, other namespaces).
            case .readOnly: return EPERM
            case .exists: return EEXIST
            // "Object is remote": only the remote has the file; a read or `darkdisk fetch` brings it here.
            // (Not EAGAIN: the kernel turns an EAGAIN answer to setxattr into EOPNOTSUPP.)
            case .notLocal: return EREMOTE
            }
        case let error as RemoteError:
            switch error.code {
            case .notFound, .unknownNode: return ENOENT
            case .accessDenied: return EACCES
            case .notLocal: return EREMOTE
            case .unreachable, .changed, .invalidResponse, .invalidURL, .io, .emptyListing, .preconditionFailed, .foreignKey: return EIO
            }
        case let error as CryptoError:
            switch error.code {
            case .io: return error.errno ?? EIO
            // Damage, a wrong key, an OpenSSL failure: the bytes cannot be served.
            default: return EIO
            }
        case is CancellationError:
            return EINTR
        case let error as Errno:
            return error.rawValue
        case let error as any DarkDiskFailure:
            return error.systemErrno?.rawValue ?? EIO
        default:
            return EIO
        }
    }
}
