/* quantize.c - a checkpoint's matrices quantized to a block type at load:
 * each row converted to f32, quantized by base/quant.c, and the blocks
 * copied onto the backend in pieces of at most 64 MiB of blocks; and the
 * block types no kernel reads widened the same way, exactly
 * (base/quant_widen.h). */
#include "model/quantize.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"
#include "base/parallel_rows.h"
#include "base/quant.h"
#include "base/quant_widen.h"

enc_status model_quantize_type(const char *name, gguf_file_type *out)
{
    *out = (gguf_file_type){ENC_F32, false};
    if (!name || !*name || !strcasecmp(name, "none")) return ENC_OK;
    static const struct {
        const char *name;
        gguf_file_type t;
    } types[] = {{"q8_0", {ENC_Q8_0, false}}, {"q4_0", {ENC_Q4_0, false}},
                 {"q4_k", {ENC_Q4_K, false}}, {"q5_k", {ENC_Q5_K, false}},
                 {"q6_k", {ENC_Q6_K, false}}, {"q4_k_m", {ENC_Q4_K, true}},
                 {"q5_k_m", {ENC_Q5_K, true}}};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (!strcasecmp(name, types[i].name)) {
            *out = types[i].t;
            return ENC_OK;
        }
    return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                    "quantize: unknown type '%s' (expected q8_0, q4_0, q4_k, q5_k, q6_k, q4_k_m "
                    "or q5_k_m)",
                    name);
}

enum { MODEL__QUANT_PIECE = 64 << 20 }; /* bytes of blocks written at once */

static bool model__reads_everywhere(backend *be, enc_dtype dt)
{
    return backend_supports_weight_dtype(be, GRAPH_OP_MATMUL, dt) &&
           backend_supports_weight_dtype(be, GRAPH_OP_MATMUL_ID, dt) &&
           backend_supports_weight_dtype(be, GRAPH_OP_GET_ROWS, dt);
}

enc_dtype model_loaded_dtype(backend *be, const st_tensor *t, enc_dtype quantize)
{
    if (quant_is_widened(t->dtype))
        return model__reads_everywhere(be, t->dtype) ? t->dtype : quant_widened_dtype(t->dtype);
    return enc_dtype_is_quantized(quantize) && !enc_dtype_is_quantized(t->dtype) ? quantize
                                                                                 : t->dtype;
}

void model_log_widened(backend *be, const tensor_source *src, enc_dtype quantize)
{
    size_t n[ENC_DTYPE_COUNT] = {0};
    for (size_t i = 0; i < src->count(src->ctx); i++) {
        const st_tensor *t = src->get(src->ctx, i);
        if (quant_is_widened(t->dtype) && model_loaded_dtype(be, t, quantize) != t->dtype)
            n[t->dtype]++;
    }
    for (int t = 0; t < ENC_DTYPE_COUNT; t++)
        if (n[t])
            enc_log_info("%zu tensors of %s widened to %s at load (the same values, %zu bytes "
                         "a block instead of %zu)",
                         n[t], enc_dtype_name((enc_dtype)t),
                         enc_dtype_name(quant_widened_dtype((enc_dtype)t)),
                         enc_dtype_block_bytes(quant_widened_dtype((enc_dtype)t)),
                         enc_dtype_block_bytes((enc_dtype)t));
}

static const char *model__op_what(graph_op op)
{
    return op == GRAPH_OP_GET_ROWS    ? "the embedding lookup"
           : op == GRAPH_OP_MATMUL_ID ? "the expert matmul (matmul_id)"
                                      : "matmul";
}

enc_status model_check_weight_dtype(backend *be, const st_tensor *t, enc_dtype dt, graph_op op)
{
    if (backend_supports_weight_dtype(be, op, dt)) return ENC_OK;
    const char *why = dt == t->dtype               ? ""
                      : quant_is_widened(t->dtype) ? " (widened)"
                                                   : " (--quantize)";
    return enc_fail(ENC_ERR_UNSUPPORTED,
                    "%s: tensor '%s' has type %s%s, which the %s backend lacks for %s", t->file,
                    t->name, enc_dtype_name(dt), why, be->iface->name, model__op_what(op));
}

/* The rows and columns of t taken as a matrix: its last dimension is a row
 * (a stack of experts [E, N, K] is E * N rows of K). */
static int64_t model__cols(const st_tensor *t)
{
    return t->shape[t->n_dims - 1];
}
static int64_t model__rows(const st_tensor *t)
{
    int64_t rows = 1;
    for (int d = 0; d < t->n_dims - 1; d++)
        rows *= t->shape[d];
    return rows;
}

size_t model_quantized_bytes(const st_tensor *t, enc_dtype dt)
{
    return (size_t)model__rows(t) * enc_dtype_row_bytes(dt, model__cols(t));
}

/* A piece of t, its rows from r0 on, as blocks of dt into dst: float rows
 * quantized, a widened type's blocks widened. */
typedef struct {
    const st_tensor *t;
    enc_dtype dt;
    int64_t r0;
    unsigned char *dst;
} model__quantize_job;

/* Rows [r0, r1) of the job's piece (row is scratch for one). */
static void model__quantize_rows(void *ctx, int64_t r0, int64_t r1, float *row)
{
    const model__quantize_job *job = ctx;
    const st_tensor *t = job->t;
    int64_t cols = model__cols(t);
    size_t in_rb = enc_dtype_row_bytes(t->dtype, cols), out_rb = enc_dtype_row_bytes(job->dt, cols);
    for (int64_t r = job->r0 + r0; r < job->r0 + r1; r++) {
        const unsigned char *src = (const unsigned char *)t->data + (size_t)r * in_rb;
        unsigned char *out = job->dst + (size_t)(r - job->r0) * out_rb;
        if (quant_is_widened(t->dtype)) {
            quant_widen_row(t->dtype, src, out, cols);
            continue;
        }
        quant_dequantize_row(t->dtype, src, row, cols);
        quant_quantize_row(job->dt, row, out, cols);
    }
}

enc_status model_quantize_into(backend *be, const st_tensor *t, enc_dtype dt, backend_buffer *buf,
                               size_t at)
{
    int64_t rows = model__rows(t), cols = model__cols(t);
    size_t rb = enc_dtype_row_bytes(dt, cols);
    bool widen = dt == quant_widened_dtype(t->dtype) && quant_is_widened(t->dtype);
    if (t->n_dims < 2 || rb == 0 || (enc_dtype_is_quantized(t->dtype) && !widen))
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, /* the type asked for does not fit the model */
                        "%s: tensor '%s' (%s, %lld columns) cannot be quantized to %s: it needs a "
                        "float matrix whose rows are whole %lld-value blocks",
                        t->file, t->name, enc_dtype_name(t->dtype), (long long)cols,
                        enc_dtype_name(dt), (long long)enc_dtype_block_elems(dt));
    int64_t per = (int64_t)(MODEL__QUANT_PIECE / rb);
    per = per < 1 ? 1 : per;
    int64_t piece_rows = per < rows ? per : rows;
    unsigned char *blocks = malloc((size_t)piece_rows * rb + 1);
    enc_status s =
        blocks ? ENC_OK : enc_fail(ENC_ERR_OUT_OF_MEMORY, "quantizing tensor '%s'", t->name);
    for (int64_t r0 = 0; s == ENC_OK && r0 < rows; r0 += piece_rows) {
        int64_t r1 = r0 + piece_rows < rows ? r0 + piece_rows : rows;
        model__quantize_job job = {t, dt, r0, blocks};
        s = parallel_rows(r1 - r0, (double)cols, (size_t)cols, model__quantize_rows, &job);
        if (s == ENC_OK)
            s = backend_buffer_write(be, buf, at + (size_t)r0 * rb, blocks, (size_t)(r1 - r0) * rb);
    }
    free(blocks);
    return s == ENC_OK ? ENC_OK : enc_fail_context(s, "%s: tensor '%s'", t->file, t->name);
}

enc_status model_quantize_matrix(backend *be, const st_tensor *t, enc_dtype dt,
                                 backend_buffer **out)
{
    *out = NULL;
    size_t bytes = model_quantized_bytes(t, dt);
    if (bytes == 0) return model_quantize_into(be, t, dt, NULL, 0); /* fails naming t */
    if (t->n_dims != 2)
        return enc_fail(ENC_ERR_INTERNAL, "%s: tensor '%s' is no matrix", t->file, t->name);
    ENC_TRY(backend_buffer_alloc(be, bytes, t->name, out));
    enc_status s = model_quantize_into(be, t, dt, *out, 0);
    if (s != ENC_OK) {
        backend_buffer_free(be, *out); /* NULL-safe: frees what this call allocated */
        *out = NULL;
    }
    return s;
}
