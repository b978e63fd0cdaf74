#ifndef DARKDISK_INDEX_CIPHER_H
#define DARKDISK_INDEX_CIPHER_H

/// An SQLite VFS that encrypts the files of registered databases at rest with AES-256-XTS (as disk
/// encryption does), and passes every other file through to the default VFS untouched. See
/// Docs/FORMAT.md, "The index at rest".

/// Registers the VFS as the default, wrapping the current default; idempotent. 0 on success.
int darkdisk_index_cipher_install(void);

/// Encrypts (from now on, in this process) the database at `path` (absolute, as SQLite names it), its WAL
/// and rollback journal under `key` (64 bytes: the two AES-256 keys of XTS). 0 on success.
int darkdisk_index_cipher_register(const char *path, const unsigned char *key);

/// Stops encrypting the database at `path` in this process (its files keep what they hold).
void darkdisk_index_cipher_forget(const char *path);

/// Whether the database file at `path` is in the clear (begins with SQLite's magic); 0 for a missing or
/// empty file.
int darkdisk_index_cipher_is_plain(const char *path);

/// What the main file at `path` was when last opened through the VFS: 1 encrypted, 2 plaintext (an index
/// from before encryption, read as it is), 0 not opened through it or not registered.
int darkdisk_index_cipher_mode(const char *path);

#endif
