import Dispatch
import DarkDiskSync
import Synchronization

/// New stored files made ahead of need, on a thread of their own, for a process that writes many (the mount
/// daemon, while its drive journals): a new file's first write takes one instead of making it. Making an
/// unnamed file is an inode allocation (about 20 µs), which each file of a `tar x` paid inside a `write`
/// request while the program waited. The pool holds `capacity` files at most (one descriptor each); what it
/// holds when it goes is freed by the kernel (the files have no name).
final class UnnamedFilePool: Sendable {
    /// The most files held (and descriptors open); refilled when half are taken.
    static let capacity = 16

    private let files = Locked<[UnnamedFile]>([])
    private let refilling = Atomic<Bool>(false)
    private let queue = DispatchQueue(label: "darkdisk.unnamed-files")
    /// Makes one file; nil when it cannot (a full disk): the pool stops filling until the next take.
    private let make: @Sendable () -> UnnamedFile?

    init(make: @escaping @Sendable () -> UnnamedFile?) {
        self.make = make
        refill()
    }

    /// A file made ahead, if one is there; either way a refill starts when the pool runs low.
    func take() -> UnnamedFile? {
        let (file, low) = files.withLock { files in (files.popLast(), files.count <= Self.capacity / 2) }
        if low { refill() }
        return file
    }

    /// The files held now.
    var count: Int { files.withLock { $0.count } }

    private func refill() {
        guard !refilling.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { [self] in
            defer { refilling.store(false, ordering: .releasing) }
            while files.withLock({ $0.count }) < Self.capacity, let file = make() {
                files.withLock { $0.append(file) }
            }
        }
    }
}
