/// What every darkdisk error type is: a value with a code for programs (on each type) and a one-line
/// `message` for people, in the library's own terms (never a command-line flag). The command line catches
/// this one protocol, prints the message and adds its advice.
public protocol DarkDiskFailure: Error, Sendable, CustomStringConvertible {
    /// One line saying what went wrong, naming the file, node or setting involved.
    var message: String { get }
    /// The POSIX errno behind the failure, when a system call failed (the FUSE layer answers with it).
    var systemErrno: Errno? { get }
}

extension DarkDiskFailure {
    public var systemErrno: Errno? { nil }
    public var description: String { message }
}
