import Foundation
// Entry point only: commands live in their own files; FUSE callbacks live in DarkDiskFS (never here,
// where top-level code is main-actor isolated). Called as `mount.darkdisk` (mount -t darkdisk, fstab), the
// binary is mount(8)'s helper.
if CommandLine.arguments.first.map({ ($0 as NSString).lastPathComponent }) == MountHelper.name {
    MountHelper.run(Array(CommandLine.arguments.dropFirst()))
}
DarkdiskCommand.runAndExit()
