import DarkDiskFS
import Foundation

/// `mount.darkdisk`, the helper `mount -t darkdisk STORE MOUNTPOINT -o OPTIONS` and fstab lines run (the
/// same binary, called by that name: `/sbin/mount.darkdisk` links to it). It turns mount(8)'s call
/// (`STORE DIR [-sfnv] [-o OPTIONS] [-t TYPE]`) into `darkdisk mount DIR --store STORE …`, which returns
/// once the mount serves. Options only fstab, mount(8) or systemd read (`noauto`, `nofail`, `_netdev`,
/// `x-systemd.*`, `defaults`, …) are dropped; darkdisk's own (`passphrase_file=`, `remote_timeout=`,
/// `poll_interval=`, `write_back=`, `stop_timeout=`) become its flags; the kernel's and FUSE's
/// (`allow_other`, `noatime`, …) go to `-o`. STORE is a store folder, so no `HOME` is needed.
enum MountHelper {
    static let name = "mount.darkdisk"

    /// What a helper call asks for: the arguments of `darkdisk mount`, or nothing to do (`-f`).
    struct Call: Equatable {
        var arguments: [String]
        var fake = false
    }

    struct Refusal: Error, CustomStringConvertible {
        let description: String
    }

    /// Options of fstab, mount(8) and systemd that are none of the mount's business.
    static let dropped: Set<String> = ["defaults", "auto", "noauto", "nofail", "_netdev", "user", "users", "nouser",
                                       "owner", "group", "rw", "dev", "suid", "exec", "atime", "relatime", "loud", "silent"]
    /// darkdisk's own options and the flags they become.
    static let flags: [String: String] = ["passphrase_file": "--passphrase-file", "remote_timeout": "--remote-timeout",
                                          "poll_interval": "--poll-interval", "write_back": "--write-back",
                                          "stop_timeout": "--stop-timeout"]

    /// Parses mount(8)'s call of the helper.
    static func parse(_ arguments: [String]) throws(Refusal) -> Call {
        var positional: [String] = []
        var options: [String] = []
        var fake = false
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "-o", "-t", "-N":
                guard index + 1 < arguments.count else { throw Refusal(description: "\(argument) needs a value") }
                if argument == "-o" { options += arguments[index + 1].split(separator: ",").map(String.init) }
                index += 2
                continue
            case let flag where flag.hasPrefix("-") && flag.count > 1:
                for letter in flag.dropFirst() {
                    switch letter {
                    case "f": fake = true
                    case "s", "n", "v": break
                    default: throw Refusal(description: "unknown flag -\(letter)")
                    }
                }
            default:
                positional.append(argument)
            }
            index += 1
        }
        guard positional.count == 2 else { throw Refusal(description: "usage: mount.darkdisk STORE MOUNTPOINT [-o OPTIONS]") }
        let (store, mountpoint) = (positional[0], positional[1])
        guard store.hasPrefix("/") else { throw Refusal(description: "the store must be given as an absolute path to its folder, not '\(store)'") }
        var result = ["mount", mountpoint, "--store", store]
        var kernel: [String] = []
        for option in options where !option.isEmpty {
            let (key, value) = option.firstIndex(of: "=").map { (String(option[..<$0]), String(option[option.index(after: $0)...])) } ?? (option, nil)
            if dropped.contains(key) || key.hasPrefix("x-") || key == "comment" { continue }
            if let flag = flags[key] {
                guard let value, !value.isEmpty else { throw Refusal(description: "option \(key) needs a value (\(key)=…)") }
                result += [flag, value]
                continue
            }
            if key == "ro" { throw Refusal(description: "a darkdisk mount cannot be read-only as a whole (outside /files it is); drop 'ro'") }
            kernel.append(option)
        }
        do { _ = try MountOptions.parse(kernel) } catch { throw Refusal(description: error.description) }
        if !kernel.isEmpty { result += ["-o", kernel.joined(separator: ",")] }
        return Call(arguments: result, fake: fake)
    }

    /// Runs as the helper: parses, then becomes `darkdisk mount …` (or, with `-f`, does nothing).
    static func run(_ arguments: [String]) -> Never {
        do {
            let call = try parse(arguments)
            if call.fake { exit(0) }
            let binary = "/proc/self/exe"
            let argv = (["darkdisk"] + call.arguments).map { strdup($0) } + [nil]
            execv(binary, argv)
            FileHandle.standardError.write(Data("\(name): cannot run darkdisk: \(String(cString: strerror(errno)))\n".utf8))
            exit(1)
        } catch {
            FileHandle.standardError.write(Data("\(name): \(error.description)\n".utf8))
            // mount(8)'s code for a usage or syntax error.
            exit(1)
        }
    }
}
