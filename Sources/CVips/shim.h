#ifndef DARKDISK_CVIPS_SHIM_H
#define DARKDISK_CVIPS_SHIM_H

// libvips (Debian libvips-dev, 8.14). Its operations take optional arguments as C varargs ending in NULL,
// which Swift cannot call: each one darkdisk needs is wrapped here in a fixed-argument `static inline`
// function. Plain functions (vips_image_get_width, vips_error_buffer, g_object_unref, g_free, ...) are
// called from Swift directly.
#include <vips/vips.h>

static void darkdisk_vips_quiet(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data) {
    (void)domain; (void)level; (void)message; (void)data;
}

/// VIPS_INIT is a macro (it also checks the library's ABI against these headers). Call once per process.
/// libvips' warnings (a damaged tile, ...) are silenced: the failures that matter come back as errors.
static inline int darkdisk_vips_init(const char *argv0) {
    g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING, darkdisk_vips_quiet, NULL);
    return VIPS_INIT(argv0);
}

/// Decodes `buf` and scales it to fit `width` x `height` (aspect kept), or with `crop` to fill it exactly
/// (centre crop). JPEG and WebP shrink on load, so a large photo is never decoded at full size. With
/// `fail`, a truncated or damaged file is an error instead of a partly grey image.
static inline int darkdisk_vips_thumbnail_buffer(const void *buf, size_t len, VipsImage **out,
                                                 int width, int height, int crop, int fail) {
    return vips_thumbnail_buffer((void *)buf, len, out, width,
                                 "height", height,
                                 "crop", crop ? VIPS_INTERESTING_CENTRE : VIPS_INTERESTING_NONE,
                                 "option_string", fail ? "fail_on=truncated" : "",
                                 NULL);
}

/// Opens an image in memory for its header (decoding happens lazily, sequentially, when pixels are read).
static inline VipsImage *darkdisk_vips_load_buffer(const void *buf, size_t len) {
    return vips_image_new_from_buffer(buf, len, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
}

static inline int darkdisk_vips_colourspace_srgb(VipsImage *in, VipsImage **out) {
    return vips_colourspace(in, out, VIPS_INTERPRETATION_sRGB, NULL);
}

static inline int darkdisk_vips_extract_bands(VipsImage *in, VipsImage **out, int band, int n) {
    return vips_extract_band(in, out, band, "n", n, NULL);
}

static inline int darkdisk_vips_cast_uchar(VipsImage *in, VipsImage **out) {
    return vips_cast_uchar(in, out, NULL);
}

static inline int darkdisk_vips_bandjoin2(VipsImage *a, VipsImage *b, VipsImage **out) {
    return vips_bandjoin2(a, b, out, NULL);
}

/// Multiplies two images of the same size band by band, then scales by 1/255 and casts back to 8 bits
/// (used to combine an existing alpha channel with a mask).
static inline int darkdisk_vips_multiply_alpha(VipsImage *a, VipsImage *b, VipsImage **out) {
    VipsImage *product = NULL, *scaled = NULL;
    if (vips_multiply(a, b, &product, NULL)) return -1;
    int rc = vips_linear1(product, &scaled, 1.0 / 255.0, 0.0, NULL);
    g_object_unref(product);
    if (rc) return -1;
    rc = vips_cast_uchar(scaled, out, NULL);
    g_object_unref(scaled);
    return rc;
}

static inline int darkdisk_vips_jpegsave_buffer(VipsImage *in, void **buf, size_t *len, int quality) {
    return vips_jpegsave_buffer(in, buf, len, "Q", quality, "strip", TRUE, "optimize_coding", TRUE, NULL);
}

static inline int darkdisk_vips_pngsave_buffer(VipsImage *in, void **buf, size_t *len, int compression) {
    return vips_pngsave_buffer(in, buf, len, "compression", compression, "strip", TRUE, NULL);
}

static inline int darkdisk_vips_webpsave_buffer(VipsImage *in, void **buf, size_t *len, int quality) {
    return vips_webpsave_buffer(in, buf, len, "Q", quality, "strip", TRUE, NULL);
}

#endif
