#ifndef DARKDISK_CVIPS_H
#define DARKDISK_CVIPS_H

// libvips (Debian libvips42, ABI 42: libvips 8.x), loaded with dlopen on first use rather than linked.
// Linking it would load about a hundred libraries (glib, codecs, poppler, ...) into every program that
// links DarkDiskImages, the darkdisk command and its mount daemon included, adding about 23 MiB of
// resident memory and start-up time to commands that never touch an image. So this module declares only
// what darkdisk calls, with libvips' own types kept opaque, and `vips.c` resolves each function from the
// library when `darkdisk_vips_init` runs. Every wrapper is safe to call after a failed init: it fails
// (NULL or -1) and `darkdisk_vips_error_buffer` says why.

#include <stddef.h>

/// libvips' image object (a GObject), opaque here.
typedef struct _VipsImage VipsImage;

/// Loads libvips (`libvips.so.42`, or the file `DARKDISK_LIBVIPS` names), checks its ABI, silences its
/// warnings (failures come back as errors) and starts it.
/// Returns 0, or -1 with the reason in `darkdisk_vips_error_buffer`. Call once per process.
int darkdisk_vips_init(const char *argv0);

/// libvips' error text since the last clear (or why the library could not be loaded); never NULL after init.
const char *darkdisk_vips_error_buffer(void);
void darkdisk_vips_error_clear(void);

/// Turns libvips' operation cache off (darkdisk never repeats an operation on the same pixels).
void darkdisk_vips_cache_off(void);

/// Drops a reference to an image (libvips frees it with the last one).
void darkdisk_g_object_unref(VipsImage *image);
void darkdisk_g_free(void *memory);

int darkdisk_vips_image_get_width(const VipsImage *image);
int darkdisk_vips_image_get_height(const VipsImage *image);
int darkdisk_vips_image_get_bands(const VipsImage *image);
int darkdisk_vips_image_hasalpha(VipsImage *image);

/// The name of the loader libvips would use for these bytes, or NULL if none recognises them.
const char *darkdisk_vips_foreign_find_load_buffer(const void *buf, size_t len);

/// Decodes `buf` and scales it to fit `width` x `height` (aspect kept), or with `crop` to fill it exactly
/// (centre crop). JPEG and WebP shrink on load, so a large photo is never decoded at full size. With
/// `fail`, a truncated or damaged file is an error instead of a partly grey image.
int darkdisk_vips_thumbnail_buffer(const void *buf, size_t len, VipsImage **out,
                                   int width, int height, int crop, int fail);

/// Opens an image in memory for its header (decoding happens lazily, sequentially, when pixels are read).
VipsImage *darkdisk_vips_load_buffer(const void *buf, size_t len);

/// A new image of 8-bit bands copied from `data` (width * height * bands bytes).
VipsImage *darkdisk_vips_image_new_from_memory_uchar(const void *data, size_t size, int width, int height, int bands);

/// The image's pixels as one block (free it with `darkdisk_g_free`), or NULL.
void *darkdisk_vips_image_write_to_memory(VipsImage *in, size_t *size);

int darkdisk_vips_colourspace_srgb(VipsImage *in, VipsImage **out);
int darkdisk_vips_extract_bands(VipsImage *in, VipsImage **out, int band, int n);
int darkdisk_vips_cast_uchar(VipsImage *in, VipsImage **out);
int darkdisk_vips_bandjoin2(VipsImage *a, VipsImage *b, VipsImage **out);

/// Multiplies two images of the same size band by band, then scales by 1/255 and casts back to 8 bits
/// (used to combine an existing alpha channel with a mask).
int darkdisk_vips_multiply_alpha(VipsImage *a, VipsImage *b, VipsImage **out);

/// Encoders; the buffer they return is freed with `darkdisk_g_free`. Metadata is stripped.
int darkdisk_vips_jpegsave_buffer(VipsImage *in, void **buf, size_t *len, int quality);
int darkdisk_vips_pngsave_buffer(VipsImage *in, void **buf, size_t *len, int compression);
int darkdisk_vips_webpsave_buffer(VipsImage *in, void **buf, size_t *len, int quality);

#endif
