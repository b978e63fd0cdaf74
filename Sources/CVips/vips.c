// Resolves the libvips functions darkdisk uses from the shared library at run time (see CVips.h for why).
// The declarations below are libvips 8.x's (ABI 42) and glib 2's; the enum values are theirs too.
#include "CVips.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

enum { VIPS_ABI = 42 };                                     // libvips.so.42: current - age
enum { INTERESTING_NONE = 0, INTERESTING_CENTRE = 1 };    // VipsInteresting
enum { ACCESS_SEQUENTIAL = 1 };                             // VipsAccess
enum { INTERPRETATION_SRGB = 22 };                          // VipsInterpretation
enum { FORMAT_UCHAR = 0 };                                  // VipsBandFormat
enum { LOG_LEVEL_WARNING = 1 << 4 };                        // GLogLevelFlags
enum { GTRUE = 1 };

typedef void (*log_func)(const char *domain, int level, const char *message, void *data);

static struct {
    int (*version)(int flag);
    int (*init)(const char *argv0);
    const char *(*error_buffer)(void);
    void (*error_clear)(void);
    void (*cache_set_max)(int max);
    void (*cache_set_max_mem)(size_t max_mem);
    void (*cache_set_max_files)(int max_files);
    unsigned (*log_set_handler)(const char *domain, int levels, log_func func, void *data);
    void (*object_unref)(void *object);
    void (*free)(void *memory);
    int (*get_width)(const VipsImage *image);
    int (*get_height)(const VipsImage *image);
    int (*get_bands)(const VipsImage *image);
    int (*hasalpha)(VipsImage *image);
    const char *(*find_load_buffer)(const void *data, size_t size);
    int (*thumbnail_buffer)(void *buf, size_t len, VipsImage **out, int width, ...);
    VipsImage *(*new_from_buffer)(const void *buf, size_t len, const char *option_string, ...);
    VipsImage *(*new_from_memory_copy)(const void *data, size_t size, int width, int height, int bands, int format);
    void *(*write_to_memory)(VipsImage *in, size_t *size);
    int (*colourspace)(VipsImage *in, VipsImage **out, int space, ...);
    int (*extract_band)(VipsImage *in, VipsImage **out, int band, ...);
    int (*cast_uchar)(VipsImage *in, VipsImage **out, ...);
    int (*bandjoin2)(VipsImage *a, VipsImage *b, VipsImage **out, ...);
    int (*multiply)(VipsImage *a, VipsImage *b, VipsImage **out, ...);
    int (*linear1)(VipsImage *in, VipsImage **out, double a, double b, ...);
    int (*jpegsave_buffer)(VipsImage *in, void **buf, size_t *len, ...);
    int (*pngsave_buffer)(VipsImage *in, void **buf, size_t *len, ...);
    int (*webpsave_buffer)(VipsImage *in, void **buf, size_t *len, ...);
} lib;

static int loaded;
static char load_error[512] = "libvips was not started";

static void quiet(const char *domain, int level, const char *message, void *data) {
    (void)domain; (void)level; (void)message; (void)data;
}

#define RESOLVE(field, name) \
    do { \
        *(void **)(&lib.field) = dlsym(handle, name); \
        if (!lib.field) { \
            snprintf(load_error, sizeof load_error, "libvips has no %s: %s", name, dlerror()); \
            return -1; \
        } \
    } while (0)

int darkdisk_vips_init(const char *argv0) {
    if (loaded) return 0;
    // DARKDISK_LIBVIPS names another build of the library (the tests use it to see one that is missing).
    const char *library = getenv("DARKDISK_LIBVIPS");
    if (!library || !*library) library = "libvips.so.42";
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(load_error, sizeof load_error, "libvips is not installed (Debian package libvips42): %s", dlerror());
        return -1;
    }
    RESOLVE(version, "vips_version");
    RESOLVE(init, "vips_init");
    RESOLVE(error_buffer, "vips_error_buffer");
    RESOLVE(error_clear, "vips_error_clear");
    RESOLVE(cache_set_max, "vips_cache_set_max");
    RESOLVE(cache_set_max_mem, "vips_cache_set_max_mem");
    RESOLVE(cache_set_max_files, "vips_cache_set_max_files");
    RESOLVE(log_set_handler, "g_log_set_handler");
    RESOLVE(object_unref, "g_object_unref");
    RESOLVE(free, "g_free");
    RESOLVE(get_width, "vips_image_get_width");
    RESOLVE(get_height, "vips_image_get_height");
    RESOLVE(get_bands, "vips_image_get_bands");
    RESOLVE(hasalpha, "vips_image_hasalpha");
    RESOLVE(find_load_buffer, "vips_foreign_find_load_buffer");
    RESOLVE(thumbnail_buffer, "vips_thumbnail_buffer");
    RESOLVE(new_from_buffer, "vips_image_new_from_buffer");
    RESOLVE(new_from_memory_copy, "vips_image_new_from_memory_copy");
    RESOLVE(write_to_memory, "vips_image_write_to_memory");
    RESOLVE(colourspace, "vips_colourspace");
    RESOLVE(extract_band, "vips_extract_band");
    RESOLVE(cast_uchar, "vips_cast_uchar");
    RESOLVE(bandjoin2, "vips_bandjoin2");
    RESOLVE(multiply, "vips_multiply");
    RESOLVE(linear1, "vips_linear1");
    RESOLVE(jpegsave_buffer, "vips_jpegsave_buffer");
    RESOLVE(pngsave_buffer, "vips_pngsave_buffer");
    RESOLVE(webpsave_buffer, "vips_webpsave_buffer");
    // What VIPS_INIT checks: the library's ABI is the one these declarations describe.
    int abi = lib.version(3) - lib.version(5);
    if (abi != VIPS_ABI) {
        snprintf(load_error, sizeof load_error, "libvips has ABI %d; darkdisk needs %d", abi, VIPS_ABI);
        return -1;
    }
    lib.log_set_handler("VIPS", LOG_LEVEL_WARNING, quiet, NULL);
    if (lib.init(argv0) != 0) {
        const char *reason = lib.error_buffer();
        snprintf(load_error, sizeof load_error, "vips_init failed: %s", reason && *reason ? reason : "no reason given");
        return -1;
    }
    loaded = 1;
    return 0;
}

const char *darkdisk_vips_error_buffer(void) { return loaded ? lib.error_buffer() : load_error; }
void darkdisk_vips_error_clear(void) { if (loaded) lib.error_clear(); }

void darkdisk_vips_cache_off(void) {
    if (!loaded) return;
    lib.cache_set_max(0);
    lib.cache_set_max_mem(0);
    lib.cache_set_max_files(0);
}

void darkdisk_g_object_unref(VipsImage *image) { if (loaded && image) lib.object_unref(image); }
void darkdisk_g_free(void *memory) { if (loaded) lib.free(memory); }

int darkdisk_vips_image_get_width(const VipsImage *image) { return loaded ? lib.get_width(image) : 0; }
int darkdisk_vips_image_get_height(const VipsImage *image) { return loaded ? lib.get_height(image) : 0; }
int darkdisk_vips_image_get_bands(const VipsImage *image) { return loaded ? lib.get_bands(image) : 0; }
int darkdisk_vips_image_hasalpha(VipsImage *image) { return loaded ? lib.hasalpha(image) : 0; }

const char *darkdisk_vips_foreign_find_load_buffer(const void *buf, size_t len) {
    return loaded ? lib.find_load_buffer(buf, len) : NULL;
}

int darkdisk_vips_thumbnail_buffer(const void *buf, size_t len, VipsImage **out,
                                   int width, int height, int crop, int fail) {
    if (!loaded) return -1;
    return lib.thumbnail_buffer((void *)buf, len, out, width,
                                "height", height,
                                "crop", crop ? INTERESTING_CENTRE : INTERESTING_NONE,
                                "option_string", fail ? "fail_on=truncated" : "",
                                NULL);
}

VipsImage *darkdisk_vips_load_buffer(const void *buf, size_t len) {
    if (!loaded) return NULL;
    return lib.new_from_buffer(buf, len, "", "access", ACCESS_SEQUENTIAL, NULL);
}

VipsImage *darkdisk_vips_image_new_from_memory_uchar(const void *data, size_t size, int width, int height, int bands) {
    return loaded ? lib.new_from_memory_copy(data, size, width, height, bands, FORMAT_UCHAR) : NULL;
}

void *darkdisk_vips_image_write_to_memory(VipsImage *in, size_t *size) {
    return loaded ? lib.write_to_memory(in, size) : NULL;
}

int darkdisk_vips_colourspace_srgb(VipsImage *in, VipsImage **out) {
    return loaded ? lib.colourspace(in, out, INTERPRETATION_SRGB, NULL) : -1;
}

int darkdisk_vips_extract_bands(VipsImage *in, VipsImage **out, int band, int n) {
    return loaded ? lib.extract_band(in, out, band, "n", n, NULL) : -1;
}

int darkdisk_vips_cast_uchar(VipsImage *in, VipsImage **out) {
    return loaded ? lib.cast_uchar(in, out, NULL) : -1;
}

int darkdisk_vips_bandjoin2(VipsImage *a, VipsImage *b, VipsImage **out) {
    return loaded ? lib.bandjoin2(a, b, out, NULL) : -1;
}

int darkdisk_vips_multiply_alpha(VipsImage *a, VipsImage *b, VipsImage **out) {
    if (!loaded) return -1;
    VipsImage *product = NULL, *scaled = NULL;
    if (lib.multiply(a, b, &product, NULL)) return -1;
    int rc = lib.linear1(product, &scaled, 1.0 / 255.0, 0.0, NULL);
    lib.object_unref(product);
    if (rc) return -1;
    rc = lib.cast_uchar(scaled, out, NULL);
    lib.object_unref(scaled);
    return rc;
}

int darkdisk_vips_jpegsave_buffer(VipsImage *in, void **buf, size_t *len, int quality) {
    if (!loaded) return -1;
    return lib.jpegsave_buffer(in, buf, len, "Q", quality, "strip", GTRUE, "optimize_coding", GTRUE, NULL);
}

int darkdisk_vips_pngsave_buffer(VipsImage *in, void **buf, size_t *len, int compression) {
    if (!loaded) return -1;
    return lib.pngsave_buffer(in, buf, len, "compression", compression, "strip", GTRUE, NULL);
}

int darkdisk_vips_webpsave_buffer(VipsImage *in, void **buf, size_t *len, int quality) {
    if (!loaded) return -1;
    return lib.webpsave_buffer(in, buf, len, "Q", quality, "strip", GTRUE, NULL);
}
