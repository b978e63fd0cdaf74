import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Closing a spawned child's inherited descriptors: glibc's `posix_spawn_file_actions_addclosefrom_np`
/// (2.34 and later), which Swift's Glibc module does not show (it is `_GNU_SOURCE`), found at run time.
package enum SpawnClosingFrom {
    private typealias AddClosefrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    private static let addClosefrom: AddClosefrom? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: AddClosefrom.self) }

    /// Adds to `actions` the closing of every descriptor from `first` on, after the actions added before.
    /// False where the C library cannot (the child then inherits what is not close-on-exec).
    @discardableResult
    package static func add(to actions: inout posix_spawn_file_actions_t, from first: Int32) -> Bool {
        guard let addClosefrom else { return false }
        return addClosefrom(&actions, first) == 0
    }
}
