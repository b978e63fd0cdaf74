#include "IndexCipher.h"

#include <openssl/evp.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// Lock order: `registry_lock` is taken inside an open of a file by SQLite (which then holds no lock of its
// own) and before SQLite's VFS mutex (`sqlite3_vfs_find`, `sqlite3_vfs_register` at install); under it the
// code only copies keys. SQLite never calls into this file while holding its VFS mutex.

#define KEY_SIZE 64
#define MAIN_UNIT 4096
#define WAL_HEADER 32
#define WAL_FRAME_HEADER 24
#define MAX_UNIT 65536

enum { KIND_MAIN = 1, KIND_WAL = 2, KIND_JOURNAL = 3 };
enum { MODE_UNKNOWN = 0, MODE_ENCRYPTED = 1, MODE_PLAIN = 2 };

typedef struct Entry {
    struct Entry *next;
    char *path;
    unsigned char key[KEY_SIZE];
    int mode;
} Entry;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static Entry *registry = NULL;
static sqlite3_vfs *real_vfs = NULL;
static sqlite3_vfs cipher_vfs;
static int installed = 0;

/// A file of a registered database: the real file follows this struct in SQLite's allocation.
typedef struct CipherFile {
    sqlite3_file base;
    sqlite3_file *real;
    int kind;
    int encrypted;
    unsigned int walPage;
    unsigned char key[KEY_SIZE];
    /// Keyed once: `ctx[1]` encrypts, `ctx[0]` decrypts; each unit only sets its tweak.
    EVP_CIPHER_CTX *ctx[2];
    /// The cipher's output, and a whole unit read for part of it (both `MAX_UNIT` bytes).
    unsigned char *unit;
    unsigned char *scratch;
} CipherFile;

static Entry *find_locked(const char *path) {
    for (Entry *entry = registry; entry; entry = entry->next) {
        if (strcmp(entry->path, path) == 0) return entry;
    }
    return NULL;
}

static uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

/// Encrypts (`encrypt` 1) or decrypts one unit of `size` bytes in place: XTS with the tweak the unit's
/// index and the file's kind, so no two units of a database share one.
static int crypt_unit(CipherFile *file, unsigned char *data, int size, uint64_t index, int encrypt) {
    unsigned char tweak[16];
    for (int i = 0; i < 8; i++) tweak[i] = (unsigned char)(index >> (8 * i));
    for (int i = 8; i < 16; i++) tweak[i] = 0;
    tweak[8] = (unsigned char)file->kind;
    int length = 0;
    EVP_CIPHER_CTX *ctx = file->ctx[encrypt ? 1 : 0];
    if (EVP_CipherInit_ex(ctx, NULL, NULL, NULL, tweak, -1) != 1) return SQLITE_IOERR;
    if (EVP_CipherUpdate(ctx, file->unit, &length, data, size) != 1 || length != size) return SQLITE_IOERR;
    memcpy(data, file->unit, (size_t)size);
    return SQLITE_OK;
}

/// The layout of a file: `header` clear bytes, then units of `unit` bytes each after `gap` clear bytes
/// (a WAL: 32, then frames of a 24-byte header and a page; any other file: units from offset 0).
typedef struct Layout {
    sqlite3_int64 header;
    sqlite3_int64 gap;
    sqlite3_int64 unit;
} Layout;

static int layout(CipherFile *file, Layout *out) {
    if (file->kind != KIND_WAL) {
        out->header = 0;
        out->gap = 0;
        out->unit = MAIN_UNIT;
        return SQLITE_OK;
    }
    if (file->walPage == 0) {
        unsigned char header[WAL_HEADER];
        int rc = file->real->pMethods->xRead(file->real, header, WAL_HEADER, 0);
        if (rc != SQLITE_OK) return rc == SQLITE_IOERR_SHORT_READ ? SQLITE_IOERR_SHORT_READ : rc;
        uint32_t magic = be32(header), page = be32(header + 8);
        if ((magic != 0x377f0682 && magic != 0x377f0683) || page < 512 || page > MAX_UNIT || (page & (page - 1))) return SQLITE_IOERR;
        file->walPage = page;
    }
    out->header = WAL_HEADER;
    out->gap = WAL_FRAME_HEADER;
    out->unit = file->walPage;
    return SQLITE_OK;
}

/// The part of an access from `position` to `stop` that lies in one piece of the file: clear bytes, or
/// (`isUnit`) unit `index`, which spans `start` to `end`; the piece of the access ends at `limit`.
typedef struct Segment {
    int isUnit;
    uint64_t index;
    sqlite3_int64 start, end, limit;
} Segment;

static Segment segment_at(const Layout *l, sqlite3_int64 position, sqlite3_int64 stop) {
    Segment segment = {0, 0, 0, 0, 0};
    if (position < l->header) {
        segment.end = l->header;
    } else {
        sqlite3_int64 span = l->gap + l->unit;
        sqlite3_int64 k = (position - l->header) / span;
        sqlite3_int64 frame = l->header + k * span;
        if (position < frame + l->gap) {
            segment.end = frame + l->gap;
        } else {
            segment.isUnit = 1;
            segment.index = (uint64_t)k;
            segment.start = frame + l->gap;
            segment.end = segment.start + l->unit;
        }
    }
    segment.limit = segment.end < stop ? segment.end : stop;
    return segment;
}

static int cipher_read(sqlite3_file *base, void *buffer, int amount, sqlite3_int64 offset) {
    CipherFile *file = (CipherFile *)base;
    if (!file->encrypted) return file->real->pMethods->xRead(file->real, buffer, amount, offset);
    if (file->kind == KIND_WAL && offset < WAL_HEADER && offset + amount <= WAL_HEADER) {
        return file->real->pMethods->xRead(file->real, buffer, amount, offset);
    }
    Layout l;
    int rc = layout(file, &l);
    if (rc == SQLITE_IOERR_SHORT_READ) {
        memset(buffer, 0, (size_t)amount);
        return SQLITE_IOERR_SHORT_READ;
    }
    if (rc != SQLITE_OK) return rc;
    unsigned char *out = buffer;
    sqlite3_int64 stop = offset + amount;
    int result = SQLITE_OK;
    for (sqlite3_int64 position = offset; position < stop;) {
        Segment g = segment_at(&l, position, stop);
        sqlite3_int64 start = g.start, end = g.end, limit = g.limit;
        if (!g.isUnit) {
            rc = file->real->pMethods->xRead(file->real, out + (position - offset), (int)(limit - position), position);
            if (rc == SQLITE_IOERR_SHORT_READ) result = rc;
            else if (rc != SQLITE_OK) return rc;
        } else {
            unsigned char *whole = out + (start - offset);
            int inPlace = start >= offset && end <= stop;
            unsigned char *scratch = file->scratch;
            unsigned char *target = inPlace ? whole : scratch;
            rc = file->real->pMethods->xRead(file->real, target, (int)l.unit, start);
            if (rc == SQLITE_IOERR_SHORT_READ) {
                // Beyond the end of the file (or a unit cut short by a crash): nothing to decrypt.
                memset(out + (position - offset), 0, (size_t)(limit - position));
                result = rc;
            } else if (rc != SQLITE_OK) {
                return rc;
            } else {
                if ((rc = crypt_unit(file, target, (int)l.unit, g.index, 0)) != SQLITE_OK) return rc;
                if (!inPlace) memcpy(out + (position - offset), scratch + (position - start), (size_t)(limit - position));
            }
        }
        position = limit;
    }
    return result;
}

static int cipher_write(sqlite3_file *base, const void *buffer, int amount, sqlite3_int64 offset) {
    CipherFile *file = (CipherFile *)base;
    if (!file->encrypted) return file->real->pMethods->xWrite(file->real, buffer, amount, offset);
    if (file->kind == KIND_WAL && offset == 0 && amount >= WAL_HEADER) {
        // A new WAL header: its page size lays out the frames that follow.
        uint32_t page = be32((const unsigned char *)buffer + 8);
        if (page < 512 || page > MAX_UNIT || (page & (page - 1))) return SQLITE_IOERR_WRITE;
        file->walPage = page;
    }
    if (file->kind == KIND_WAL && offset + amount <= WAL_HEADER) {
        return file->real->pMethods->xWrite(file->real, buffer, amount, offset);
    }
    Layout l;
    int rc = layout(file, &l);
    if (rc != SQLITE_OK) return SQLITE_IOERR_WRITE;
    const unsigned char *in = buffer;
    sqlite3_int64 stop = offset + amount;
    for (sqlite3_int64 position = offset; position < stop;) {
        Segment g = segment_at(&l, position, stop);
        sqlite3_int64 start = g.start, end = g.end, limit = g.limit;
        if (!g.isUnit) {
            rc = file->real->pMethods->xWrite(file->real, in + (position - offset), (int)(limit - position), position);
            if (rc != SQLITE_OK) return rc;
        } else {
            unsigned char *scratch = file->scratch;
            if (start < offset || end > stop) {
                // Part of a unit: the rest is what the file holds (zeros beyond its end).
                rc = file->real->pMethods->xRead(file->real, scratch, (int)l.unit, start);
                if (rc == SQLITE_IOERR_SHORT_READ) {
                    memset(scratch, 0, (size_t)l.unit);
                } else if (rc != SQLITE_OK) {
                    return rc;
                } else if ((rc = crypt_unit(file, scratch, (int)l.unit, g.index, 0)) != SQLITE_OK) {
                    return SQLITE_IOERR_WRITE;
                }
            }
            memcpy(scratch + (position - start), in + (position - offset), (size_t)(limit - position));
            if ((rc = crypt_unit(file, scratch, (int)l.unit, g.index, 1)) != SQLITE_OK) return SQLITE_IOERR_WRITE;
            rc = file->real->pMethods->xWrite(file->real, scratch, (int)l.unit, start);
            if (rc != SQLITE_OK) return rc;
        }
        position = limit;
    }
    return SQLITE_OK;
}

static int cipher_close(sqlite3_file *base) {
    CipherFile *file = (CipherFile *)base;
    int rc = file->real->pMethods ? file->real->pMethods->xClose(file->real) : SQLITE_OK;
    for (int i = 0; i < 2; i++) {
        if (file->ctx[i]) EVP_CIPHER_CTX_free(file->ctx[i]);
        file->ctx[i] = NULL;
    }
    if (file->unit) {
        OPENSSL_cleanse(file->unit, MAX_UNIT);
        free(file->unit);
    }
    if (file->scratch) {
        OPENSSL_cleanse(file->scratch, MAX_UNIT);
        free(file->scratch);
    }
    OPENSSL_cleanse(file->key, KEY_SIZE);
    file->unit = NULL;
    file->scratch = NULL;
    return rc;
}

#define FORWARD(name, ...) (((CipherFile *)base)->real->pMethods->name(((CipherFile *)base)->real, ##__VA_ARGS__))

static int cipher_truncate(sqlite3_file *base, sqlite3_int64 size) { return FORWARD(xTruncate, size); }
static int cipher_sync(sqlite3_file *base, int flags) { return FORWARD(xSync, flags); }
static int cipher_file_size(sqlite3_file *base, sqlite3_int64 *size) { return FORWARD(xFileSize, size); }
static int cipher_lock(sqlite3_file *base, int level) { return FORWARD(xLock, level); }
static int cipher_unlock(sqlite3_file *base, int level) { return FORWARD(xUnlock, level); }
static int cipher_check_reserved(sqlite3_file *base, int *out) { return FORWARD(xCheckReservedLock, out); }
static int cipher_file_control(sqlite3_file *base, int op, void *arg) { return FORWARD(xFileControl, op, arg); }
static int cipher_sector_size(sqlite3_file *base) { return FORWARD(xSectorSize); }
static int cipher_device(sqlite3_file *base) { return FORWARD(xDeviceCharacteristics); }
static int cipher_shm_map(sqlite3_file *base, int region, int size, int extend, void volatile **out) {
    return FORWARD(xShmMap, region, size, extend, out);
}
static int cipher_shm_lock(sqlite3_file *base, int offset, int n, int flags) { return FORWARD(xShmLock, offset, n, flags); }
static void cipher_shm_barrier(sqlite3_file *base) { FORWARD(xShmBarrier); }
static int cipher_shm_unmap(sqlite3_file *base, int delete) { return FORWARD(xShmUnmap, delete); }

// Version 2: no xFetch, so SQLite never maps a file and reads every page through `cipher_read`.
static const sqlite3_io_methods cipher_methods = {
    2, cipher_close, cipher_read, cipher_write, cipher_truncate, cipher_sync, cipher_file_size, cipher_lock,
    cipher_unlock, cipher_check_reserved, cipher_file_control, cipher_sector_size, cipher_device,
    cipher_shm_map, cipher_shm_lock, cipher_shm_barrier, cipher_shm_unmap, NULL, NULL,
};

/// Whether the database file at `path` is in the clear: it begins with SQLite's magic. (Missing or empty:
/// not; a new database is encrypted from its first page.)
int darkdisk_index_cipher_is_plain(const char *path) {
    unsigned char magic[16];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t got = pread(fd, magic, sizeof(magic), 0);
    close(fd);
    return got == (ssize_t)sizeof(magic) && memcmp(magic, "SQLite format 3", 16) == 0;
}

/// The registered database a file to open belongs to, copied with its kind and (for a WAL or journal)
/// whether that database is in the clear, read from its file: a WAL always goes with the database beside
/// it, whatever another opening registered meanwhile. 0 if none.
static int registered(const char *name, int flags, unsigned char *key, int *kind, int *mode) {
    if (!name) return 0;
    size_t length = strlen(name);
    char *main = NULL;
    if (flags & SQLITE_OPEN_MAIN_DB) {
        *kind = KIND_MAIN;
        main = strdup(name);
    } else if ((flags & SQLITE_OPEN_WAL) && length > 4 && strcmp(name + length - 4, "-wal") == 0) {
        *kind = KIND_WAL;
        main = strndup(name, length - 4);
    } else if ((flags & SQLITE_OPEN_MAIN_JOURNAL) && length > 8 && strcmp(name + length - 8, "-journal") == 0) {
        *kind = KIND_JOURNAL;
        main = strndup(name, length - 8);
    } else {
        return 0;
    }
    if (!main) return 0;
    pthread_mutex_lock(&registry_lock);
    Entry *entry = find_locked(main);
    if (entry) memcpy(key, entry->key, KEY_SIZE);
    pthread_mutex_unlock(&registry_lock);
    if (entry && *kind != KIND_MAIN) *mode = darkdisk_index_cipher_is_plain(main) ? MODE_PLAIN : MODE_ENCRYPTED;
    free(main);
    return entry != NULL;
}

static void note_mode(const char *path, int mode) {
    pthread_mutex_lock(&registry_lock);
    Entry *entry = find_locked(path);
    if (entry) entry->mode = mode;
    pthread_mutex_unlock(&registry_lock);
}

static int cipher_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *base, int flags, int *outFlags) {
    (void)vfs;
    unsigned char key[KEY_SIZE];
    int kind = 0, mode = MODE_UNKNOWN;
    if (!registered(name, flags, key, &kind, &mode)) return real_vfs->xOpen(real_vfs, name, base, flags, outFlags);
    CipherFile *file = (CipherFile *)base;
    memset(file, 0, sizeof(CipherFile));
    file->real = (sqlite3_file *)(file + 1);
    int rc = real_vfs->xOpen(real_vfs, name, file->real, flags, outFlags);
    if (rc != SQLITE_OK) {
        OPENSSL_cleanse(key, KEY_SIZE);
        return rc;
    }
    file->kind = kind;
    if (kind == KIND_MAIN) {
        // An index written before it was encrypted starts with SQLite's magic: it is read as it is.
        unsigned char magic[16];
        sqlite3_int64 size = 0;
        mode = MODE_ENCRYPTED;
        if (file->real->pMethods->xFileSize(file->real, &size) == SQLITE_OK && size >= 16
            && file->real->pMethods->xRead(file->real, magic, 16, 0) == SQLITE_OK && memcmp(magic, "SQLite format 3", 16) == 0) {
            mode = MODE_PLAIN;
        }
        note_mode(name, mode);
    }
    file->encrypted = mode != MODE_PLAIN;
    memcpy(file->key, key, KEY_SIZE);
    OPENSSL_cleanse(key, KEY_SIZE);
    file->unit = malloc(MAX_UNIT);
    file->scratch = malloc(MAX_UNIT);
    int keyed = 1;
    for (int i = 0; i < 2; i++) {
        file->ctx[i] = EVP_CIPHER_CTX_new();
        keyed = keyed && file->ctx[i] && EVP_CipherInit_ex(file->ctx[i], EVP_aes_256_xts(), NULL, file->key, NULL, i) == 1;
    }
    if (!keyed || !file->unit || !file->scratch) {
        cipher_close(base);
        return SQLITE_NOMEM;
    }
    file->base.pMethods = &cipher_methods;
    return SQLITE_OK;
}

static int cipher_delete(sqlite3_vfs *v, const char *name, int sync) { (void)v; return real_vfs->xDelete(real_vfs, name, sync); }
static int cipher_access(sqlite3_vfs *v, const char *name, int flags, int *out) { (void)v; return real_vfs->xAccess(real_vfs, name, flags, out); }
static int cipher_full_pathname(sqlite3_vfs *v, const char *name, int n, char *out) { (void)v; return real_vfs->xFullPathname(real_vfs, name, n, out); }
static void *cipher_dl_open(sqlite3_vfs *v, const char *name) { (void)v; return real_vfs->xDlOpen(real_vfs, name); }
static void cipher_dl_error(sqlite3_vfs *v, int n, char *out) { (void)v; real_vfs->xDlError(real_vfs, n, out); }
static void (*cipher_dl_sym(sqlite3_vfs *v, void *handle, const char *symbol))(void) { (void)v; return real_vfs->xDlSym(real_vfs, handle, symbol); }
static void cipher_dl_close(sqlite3_vfs *v, void *handle) { (void)v; real_vfs->xDlClose(real_vfs, handle); }
static int cipher_randomness(sqlite3_vfs *v, int n, char *out) { (void)v; return real_vfs->xRandomness(real_vfs, n, out); }
static int cipher_sleep(sqlite3_vfs *v, int micros) { (void)v; return real_vfs->xSleep(real_vfs, micros); }
static int cipher_current_time(sqlite3_vfs *v, double *out) { (void)v; return real_vfs->xCurrentTime(real_vfs, out); }
static int cipher_last_error(sqlite3_vfs *v, int n, char *out) { (void)v; return real_vfs->xGetLastError(real_vfs, n, out); }
static int cipher_current_time64(sqlite3_vfs *v, sqlite3_int64 *out) { (void)v; return real_vfs->xCurrentTimeInt64(real_vfs, out); }

int darkdisk_index_cipher_install(void) {
    pthread_mutex_lock(&registry_lock);
    int rc = SQLITE_OK;
    if (!installed) {
        real_vfs = sqlite3_vfs_find(NULL);
        if (!real_vfs || real_vfs->iVersion < 2) {
            rc = SQLITE_ERROR;
        } else {
            memset(&cipher_vfs, 0, sizeof(cipher_vfs));
            cipher_vfs.iVersion = 2;
            cipher_vfs.szOsFile = (int)sizeof(CipherFile) + real_vfs->szOsFile;
            cipher_vfs.mxPathname = real_vfs->mxPathname;
            cipher_vfs.zName = "darkdisk-index";
            cipher_vfs.xOpen = cipher_open;
            cipher_vfs.xDelete = cipher_delete;
            cipher_vfs.xAccess = cipher_access;
            cipher_vfs.xFullPathname = cipher_full_pathname;
            cipher_vfs.xDlOpen = cipher_dl_open;
            cipher_vfs.xDlError = cipher_dl_error;
            cipher_vfs.xDlSym = cipher_dl_sym;
            cipher_vfs.xDlClose = cipher_dl_close;
            cipher_vfs.xRandomness = cipher_randomness;
            cipher_vfs.xSleep = cipher_sleep;
            cipher_vfs.xCurrentTime = cipher_current_time;
            cipher_vfs.xGetLastError = cipher_last_error;
            cipher_vfs.xCurrentTimeInt64 = cipher_current_time64;
            rc = sqlite3_vfs_register(&cipher_vfs, 1);
            if (rc == SQLITE_OK) installed = 1;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return rc;
}

int darkdisk_index_cipher_register(const char *path, const unsigned char *key) {
    pthread_mutex_lock(&registry_lock);
    Entry *entry = find_locked(path);
    if (!entry) {
        entry = calloc(1, sizeof(Entry));
        if (entry) entry->path = strdup(path);
        if (!entry || !entry->path) {
            if (entry) free(entry);
            pthread_mutex_unlock(&registry_lock);
            return SQLITE_NOMEM;
        }
        entry->next = registry;
        registry = entry;
    }
    memcpy(entry->key, key, KEY_SIZE);
    pthread_mutex_unlock(&registry_lock);
    return SQLITE_OK;
}

void darkdisk_index_cipher_forget(const char *path) {
    pthread_mutex_lock(&registry_lock);
    for (Entry **link = &registry; *link; link = &(*link)->next) {
        if (strcmp((*link)->path, path) == 0) {
            Entry *gone = *link;
            *link = gone->next;
            OPENSSL_cleanse(gone->key, KEY_SIZE);
            free(gone->path);
            free(gone);
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
}

int darkdisk_index_cipher_mode(const char *path) {
    pthread_mutex_lock(&registry_lock);
    Entry *entry = find_locked(path);
    int mode = entry ? entry->mode : MODE_UNKNOWN;
    pthread_mutex_unlock(&registry_lock);
    return mode;
}
