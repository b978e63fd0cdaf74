// Entry point only: commands live in their own files; FUSE callbacks live in DarkDiskFS (never here,
// where top-level code is main-actor isolated).
DarkdiskCommand.runAndExit()
