/* quantize.c - a checkpoint's matrices quantized to a block type at load:
 * each row converted to f32, quantized by base/quant.c, and the blocks
 * copied onto the backend in pieces of at most 64 MiB of blocks. */
#include "model/quantize.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/quant.h"

enc_status model_quantize_type(const char *name, enc_dtype *out)
{
    *out = ENC_F32;
    if (!name || !*name || !strcasecmp(name, "none")) return ENC_OK;
    static const struct {
        const char *name;
        enc_dtype dt;
    } types[] = {{"q8_0", ENC_Q8_0}, {"q4_0", ENC_Q4_0}, {"q4_k", ENC_Q4_K}};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (!strcasecmp(name, types[i].name)) {
            *out = types[i].dt;
            return ENC_OK;
        }
    return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                    "quantize: unknown type '%s' (expected q8_0, q4_0 or q4_k)", name);
}

enum { MODEL__QUANT_PIECE = 64 << 20 }; /* bytes of blocks written at once */

/* Rows [r0, r1) of t as blocks of dt into dst; row is scratch for one row. */
static void model__quantize_rows(const st_tensor *t, enc_dtype dt, int64_t r0, int64_t r1,
                                 float *row, unsigned char *dst)
{
    int64_t cols = t->shape[1];
    size_t in_rb = (size_t)cols * enc_dtype_size(t->dtype), out_rb = enc_dtype_row_bytes(dt, cols);
    for (int64_t r = r0; r < r1; r++) {
        quant_dequantize_row(t->dtype, (const unsigned char *)t->data + (size_t)r * in_rb, row,
                             cols);
        quant_quantize_row(dt, row, dst + (size_t)(r - r0) * out_rb, cols);
    }
}

enc_status model_quantize_matrix(backend *be, const st_tensor *t, enc_dtype dt,
                                 backend_buffer **out)
{
    *out = NULL;
    int64_t rows = t->shape[0], cols = t->n_dims == 2 ? t->shape[1] : 0;
    size_t rb = enc_dtype_row_bytes(dt, cols);
    if (t->n_dims != 2 || rb == 0 || enc_dtype_is_quantized(t->dtype))
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: tensor '%s' (%s, %lld columns) cannot be quantized to %s: it needs a "
                        "float matrix whose rows are whole %lld-value blocks",
                        t->file, t->name, enc_dtype_name(t->dtype), (long long)cols,
                        enc_dtype_name(dt), (long long)enc_dtype_block_elems(dt));
    int64_t per = (int64_t)(MODEL__QUANT_PIECE / rb);
    per = per < 1 ? 1 : per;
    int64_t piece_rows = per < rows ? per : rows;
    float *row = malloc((size_t)cols * sizeof *row);
    unsigned char *blocks = malloc((size_t)piece_rows * rb + 1);
    enc_status s = row && blocks
                       ? backend_buffer_alloc(be, (size_t)rows * rb, t->name, out)
                       : enc_fail(ENC_ERR_OUT_OF_MEMORY, "quantizing tensor '%s'", t->name);
    for (int64_t r0 = 0; s == ENC_OK && r0 < rows; r0 += piece_rows) {
        int64_t r1 = r0 + piece_rows < rows ? r0 + piece_rows : rows;
        model__quantize_rows(t, dt, r0, r1, row, blocks);
        s = backend_buffer_write(be, *out, (size_t)r0 * rb, blocks, (size_t)(r1 - r0) * rb);
    }
    free(row);
    free(blocks);
    if (s != ENC_OK) {
        backend_buffer_free(be, *out); /* NULL-safe: frees what this call allocated */
        *out = NULL;
        return enc_fail_context(s, "%s: tensor '%s'", t->file, t->name);
    }
    return ENC_OK;
}
