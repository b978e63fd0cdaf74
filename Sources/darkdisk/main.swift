import DarkDiskSystem
import Foundation
// Entry point only: commands live in their own files; FUSE callbacks live in DarkDiskFS (never here,
// where top-level code is main-actor isolated). Called as `mount.darkdisk` (mount -t darkdisk, fstab), the
// binary is mount(8)'s helper.
// Before any key is read: no core dump, no other process of the user reading this one's memory.
for problem in ProcessHardening.apply() {
    FileHandle.standardError.write(Data("darkdisk: warning: \(problem)\n".utf8))
}
if CommandLine.arguments.first.map({ ($0 as NSString).lastPathComponent }) == MountHelper.name {
    MountHelper.run(Array(CommandLine.arguments.dropFirst()))
}
DarkdiskCommand.runAndExit()
