// The remote clients (file://, http(s)://, s3://) live in DarkDiskRemote, which knows nothing of the store;
// a program that imports DarkDiskCloud gets them too.
@_exported import DarkDiskRemote
