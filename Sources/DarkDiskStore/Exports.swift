// The clock protocol and its system form, so a program sets a clock without importing DarkDiskSystem.
@_exported import protocol DarkDiskSystem.StoreClock
@_exported import struct DarkDiskSystem.SystemClock
