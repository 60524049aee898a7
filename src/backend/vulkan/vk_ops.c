/* vk_ops.c - from a graph node to its dispatches: which tensor goes in
 * which binding (and which range of its buffer), the push constants, and
 * the workgroup grid, for every op of the Qwen3 step. The shaders document
 * the binding and parameter layout each expects (shaders/NAME.comp).
 *
 * A binding covers at most maxStorageBufferRange bytes from an offset
 * aligned to minStorageBufferOffsetAlignment; the tensor's word offset
 * inside that range goes in push.off[]. Weights larger than one range (an
 * embedding of 150k rows) are split into windows of whole rows: matmul
 * dispatches once per window of output columns, get_rows once per window
 * of table rows. Dispatch grids are at most 65535 groups wide: longer 1-D
 * jobs use a second grid dimension, longer row jobs more dispatches. None of
 * this changes a value: each output element is computed by one workgroup in
 * one fixed order. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "backend/vulkan/vk_impl.h"
#include "graph/sample_row.h"

enum { VK__GRID_MAX = 65535, VK__MATMUL_RPW = 128 /* weight rows per workgroup (matmul.comp) */,
       VK__MATMUL_Q_RPW = 64 /* matmul_q.comp, matmul_id_q.comp */,
       VK__NORM_RPW_SUBGROUP = 8 /* rows per workgroup, subgroup variant (rms_norm.comp) */,
       VK__ROWS_MAX = 65535 * 8 };

typedef struct vk__plan {
    const vk_ctx *c;
    const graph_node *n;
    vk_dispatch *out; /* [VK_MAX_DISPATCHES] */
    int n_out;
} vk__plan;

static const char *vk__tname(const graph_tensor *t) { return t && t->name ? t->name : "?"; }

/* Binding alignment: the device's, and at least a word. */
static size_t vk__align(const vk_ctx *c)
{
    size_t a = (size_t)c->props.limits.minStorageBufferOffsetAlignment;
    return a < 4 ? 4 : a;
}

/* The bytes one texel view can see. */
static size_t vk__texel_range_max(const vk_ctx *c)
{
    return (size_t)c->props.limits.maxTexelBufferElements * VK_TEXEL_BYTES;
}

/* Texel view alignment: the device's, and at least a texel. */
static size_t vk__texel_align(const vk_ctx *c)
{
    size_t a = (size_t)c->props.limits.minTexelBufferOffsetAlignment;
    return a < VK_TEXEL_BYTES ? VK_TEXEL_BYTES : a;
}

/* The bytes one binding can see, past the alignment slack (of a storage
 * binding or a texel view: with c->texels a view sees as far as a storage
 * binding, so a tensor one can bind, the other can too). */
static size_t vk__window(const vk_ctx *c)
{
    size_t a = vk__align(c) > vk__texel_align(c) ? vk__align(c) : vk__texel_align(c);
    return (size_t)c->props.limits.maxStorageBufferRange - a;
}

/* Bind nbytes of tensor t, from byte `skip` of it, to binding b of d. */
static enc_status vk__bind(const vk__plan *pl, vk_dispatch *d, int b, const graph_tensor *t, size_t skip,
                           size_t nbytes)
{
    const vk_ctx *c = pl->c;
    const char *op = graph_op_name(pl->n->op);
    if (!t) return ENC_OK; /* the dummy buffer (bufs[b] stays NULL) */
    backend_buffer *buf = t->buffer;
    if (!buf) return enc_fail(ENC_ERR_INTERNAL, "vulkan: %s: tensor '%s' is bound to no buffer", op, vk__tname(t));
    size_t off = t->offset + skip, size = buf->size;
    if (off > size || nbytes > size - off)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "vulkan: %s: tensor '%s' (%zu bytes at offset %zu) lies outside "
                        "its %zu-byte buffer '%s'", op, vk__tname(t), nbytes, off, size, buf->what);
    if (off % 4)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "vulkan: %s: tensor '%s' at offset %zu of '%s' is not 4-byte aligned",
                        op, vk__tname(t), off, buf->what);
    size_t start = off - off % vk__align(c);
    size_t range = (size + 3) / 4 * 4 - start; /* the VkBuffer holds whole words */
    if (range > c->props.limits.maxStorageBufferRange) range = c->props.limits.maxStorageBufferRange;
    if (off - start + nbytes > range)
        return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: %s: tensor '%s' of %zu bytes exceeds the largest storage "
                        "buffer range of device '%s' (%u bytes)", op, vk__tname(t), nbytes, c->props.deviceName,
                        c->props.limits.maxStorageBufferRange);
    d->bufs[b] = buf;
    d->start[b] = start;
    d->range[b] = range ? range : VK_WHOLE_SIZE;
    d->push.off[b] = (uint32_t)((off - start) / 4);
    return ENC_OK;
}

/* The view onto nbytes of tensor t from byte `skip` of it: it starts there,
 * aligned down, and runs as far as a view may (whole texels of the buffer);
 * whether it covers them. */
static bool vk__texel_window(const vk_ctx *c, const graph_tensor *t, size_t skip, size_t nbytes, size_t *start,
                             size_t *range)
{
    backend_buffer *buf = t->buffer;
    size_t off = t->offset + skip, max = vk__texel_range_max(c);
    *start = off - off % vk__texel_align(c);
    *range = buf && buf->size > *start ? buf->size - *start : 0;
    *range = (*range < max ? *range : max) / VK_TEXEL_BYTES * VK_TEXEL_BYTES;
    return buf && off % VK_TEXEL_BYTES == 0 && off - *start + nbytes <= *range;
}

/* Whether nbytes of t from byte skip fit one texel view (vk__bind_texels). */
static bool vk__texels_cover(const vk_ctx *c, const graph_tensor *t, size_t skip, size_t nbytes)
{
    size_t start, range;
    return c->texels && vk__texel_window(c, t, skip, nbytes, &start, &range);
}

/* Texel view v of d onto nbytes of tensor t from byte `skip` of it (which
 * starts on 16 bytes), for 16-byte loads (vk__texel_window): one view per
 * tensor, made once (vk_buffer_view). */
static enc_status vk__bind_texels(const vk__plan *pl, vk_dispatch *d, int v, const graph_tensor *t, size_t skip,
                                  size_t nbytes)
{
    const vk_ctx *c = pl->c;
    backend_buffer *buf = t->buffer;
    size_t off = t->offset + skip, max = vk__texel_range_max(c), start, range;
    if (!vk__texel_window(c, t, skip, nbytes, &start, &range))
        return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: %s: tensor '%s' (%zu bytes at offset %zu) does not fit a "
                        "texel view of device '%s' (%zu bytes)", graph_op_name(pl->n->op), vk__tname(t), nbytes,
                        off, c->props.deviceName, max);
    d->tex[v] = buf;
    d->tex_start[v] = start;
    d->tex_range[v] = range;
    d->push.toff[v] = (uint32_t)((off - start) / VK_TEXEL_BYTES);
    return ENC_OK;
}

/* Whether the whole of tensor t fits one texel view (vk__bind_texels). */
static bool vk__texels_fit(const vk_ctx *c, const graph_tensor *t)
{
    size_t off = t->offset;
    return c->texels && t->buffer && off % VK_TEXEL_BYTES == 0 &&
           off % vk__texel_align(c) + graph_tensor_nbytes(t) <= vk__texel_range_max(c);
}

static enc_status vk__bind_all(const vk__plan *pl, vk_dispatch *d, int b, const graph_tensor *t)
{
    return vk__bind(pl, d, b, t, 0, t ? graph_tensor_nbytes(t) : 0);
}

/* A new dispatch of the node's op; NULL (with a message) past the maximum. */
static vk_dispatch *vk__new(vk__plan *pl, enc_status *s)
{
    if (pl->n_out == VK_MAX_DISPATCHES) {
        *s = enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: %s needs more than %d dispatches", graph_op_name(pl->n->op),
                      VK_MAX_DISPATCHES);
        return NULL;
    }
    vk_dispatch *d = &pl->out[pl->n_out++];
    memset(d, 0, sizeof *d);
    d->op = pl->n->op;
    d->groups[0] = d->groups[1] = d->groups[2] = 1;
    *s = ENC_OK;
    return d;
}

/* A new dispatch with tensors ts[0 .. n) at bindings 0 .. n-1 (NULL: none). */
static enc_status vk__single(vk__plan *pl, const graph_tensor *const *ts, int n, vk_dispatch **out)
{
    enc_status s;
    vk_dispatch *d = vk__new(pl, &s);
    if (!d) return s;
    for (int b = 0; b < n; b++) ENC_TRY(vk__bind_all(pl, d, b, ts[b]));
    *out = d;
    return ENC_OK;
}

/* A 1-D job of n invocations in workgroups of `local`. */
static void vk__grid_1d(vk_dispatch *d, int64_t n, uint32_t local)
{
    int64_t groups = (n + local - 1) / local;
    if (groups < 1) groups = 1;
    d->groups[0] = (uint32_t)(groups < VK__GRID_MAX ? groups : VK__GRID_MAX);
    d->groups[1] = (uint32_t)((groups + VK__GRID_MAX - 1) / VK__GRID_MAX);
}

static uint32_t vk__f32_bits(double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* --- block-quantized weights ------------------------------------------------ */

int vk_qtype_slot(enc_dtype t)
{
    if (t >= ENC_Q8_0 && t <= ENC_Q6_K) return (int)(t - ENC_Q8_0);
    static const enc_dtype more[] = {ENC_IQ4_NL, ENC_Q5_0, ENC_IQ4_XS, ENC_Q2_K, ENC_Q3_K, ENC_Q4_1, ENC_Q5_1};
    for (int i = 0; i < (int)(sizeof more / sizeof more[0]); i++)
        if (t == more[i]) return ENC_Q6_K - ENC_Q8_0 + 1 + i;
    return -1;
}

bool vk_ops_reads_quantized(graph_op op, enc_dtype t)
{
    return (op == GRAPH_OP_MATMUL || op == GRAPH_OP_MATMUL_ID || op == GRAPH_OP_GET_ROWS) &&
           vk_qtype_slot(t) >= 0;
}

/* The weights' type: an element type, or a block type the op's _q shader
 * reads (shaders/quant.glsl); anything else is refused by name. */
static enc_status vk__weight_dtype(const vk__plan *pl, const graph_tensor *w)
{
    if (w->dtype == ENC_F32 || w->dtype == ENC_BF16 || w->dtype == ENC_F16) return ENC_OK;
    if (vk_ops_reads_quantized(pl->n->op, w->dtype)) return ENC_OK;
    return enc_fail(ENC_ERR_UNSUPPORTED,
                    "vulkan: %s: tensor '%s' has dtype %s (f32, bf16, f16, q8_0, q4_0, "
                    "q4_K, q5_K, q6_K, iq4_nl or q5_0 expected)",
                    graph_op_name(pl->n->op), vk__tname(w), enc_dtype_name(w->dtype));
}

/* Bytes of one row of k values of w's type (whole blocks: graph.c checks). */
static size_t vk__row_bytes(const graph_tensor *w, int64_t k) { return enc_dtype_row_bytes(w->dtype, k); }

/* vk_dispatch.spec of the _q shaders: bits 0-1 the tokens per tile
 * (constant 0, 1 << bits), VK__SPEC_QTEX the texel path (constant 2). */
enum { VK__SPEC_QTEX = 4 };

/* The tokens per tile of matmul_q.comp (1, 2 or 4) as vk_dispatch.spec. */
static int vk__tile_spec(int64_t T) { return T <= 1 ? 0 : T == 2 ? 1 : 2; }

/* A matmul window over block-quantized weights (matmul_q.comp). */
static enc_status vk__matmul_q_window(const vk__plan *pl, vk_dispatch *d, int64_t n0, int64_t nw)
{
    const graph_tensor *x = pl->n->src[0], *w = pl->n->src[1];
    int64_t T = x->shape[0], K = x->shape[1], N = w->shape[0];
    size_t rb = vk__row_bytes(w, K);
    int spec = vk__tile_spec(T);
    /* weights and activations through texel views where both start on 16
     * bytes (quant.glsl QTEX): the same values, so the same bits either way */
    if (vk__texels_cover(pl->c, w, (size_t)n0 * rb, (size_t)nw * rb) &&
        vk__texels_cover(pl->c, x, 0, graph_tensor_nbytes(x))) {
        ENC_TRY(vk__bind_texels(pl, d, 0, w, (size_t)n0 * rb, (size_t)nw * rb));
        ENC_TRY(vk__bind_texels(pl, d, 1, x, 0, graph_tensor_nbytes(x)));
        spec |= VK__SPEC_QTEX;
    }
    uint32_t p[] = {(uint32_t)T, (uint32_t)K, (uint32_t)N, (uint32_t)rb, (uint32_t)n0, (uint32_t)nw};
    memcpy(d->push.p, p, sizeof p);
    d->qtype = w->dtype;
    d->spec = spec;
    d->groups[0] = (uint32_t)((nw + VK__MATMUL_Q_RPW - 1) / VK__MATMUL_Q_RPW);
    d->groups[1] = (uint32_t)((T + (1 << (spec & 3)) - 1) >> (spec & 3)); /* zero groups: nothing runs */
    return ENC_OK;
}

/* Rows of `row_bytes` per window of a binding: even (so that a 16-bit
 * window starts on a word), at most VK__ROWS_MAX and the total. */
static enc_status vk__rows_per_window(const vk__plan *pl, const graph_tensor *w, size_t row_bytes, int64_t total,
                                      int64_t *out)
{
    int64_t r = row_bytes ? (int64_t)(vk__window(pl->c) / row_bytes) : total;
    r = r > VK__ROWS_MAX ? VK__ROWS_MAX : r;
    r -= r % 2;
    if (r < 2 && total > 1)
        return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: %s: rows of %zu bytes of tensor '%s' exceed the storage "
                        "buffer range of device '%s'", graph_op_name(pl->n->op), row_bytes, vk__tname(w),
                        pl->c->props.deviceName);
    *out = r < total ? r : total;
    if (*out < 1) *out = 1;
    return ENC_OK;
}

/* --- the ops ------------------------------------------------------------------- */

/* Sets a window's push constants and grid: rows [r0, r0 + nw) of the weight. */
typedef enc_status (*vk__window_fn)(const vk__plan *pl, vk_dispatch *d, int64_t r0, int64_t nw);

/* An op over weight w in windows of whole rows, one dispatch per window:
 * w's window at binding wb, tensor `other` at binding ob, the output at 2. */
static enc_status vk__windowed(vk__plan *pl, const graph_tensor *w, int wb, const graph_tensor *other, int ob,
                               vk__window_fn fill)
{
    ENC_TRY(vk__weight_dtype(pl, w));
    int64_t R = w->shape[0], win = 1;
    size_t rb = vk__row_bytes(w, w->shape[1]);
    ENC_TRY(vk__rows_per_window(pl, w, rb, R, &win));
    for (int64_t r0 = 0; r0 == 0 || r0 < R; r0 += win) {
        enc_status s;
        vk_dispatch *d = vk__new(pl, &s);
        if (!d) return s;
        int64_t nw = R - r0 < win ? R - r0 : win;
        ENC_TRY(vk__bind(pl, d, wb, w, (size_t)r0 * rb, (size_t)nw * rb));
        ENC_TRY(vk__bind_all(pl, d, ob, other));
        ENC_TRY(vk__bind_all(pl, d, 2, pl->n->dst));
        ENC_TRY(fill(pl, d, r0, nw));
    }
    return ENC_OK;
}

static enc_status vk__get_rows_window(const vk__plan *pl, vk_dispatch *d, int64_t r0, int64_t nw)
{
    const graph_node *n = pl->n;
    const graph_tensor *tab = n->src[0];
    int64_t D = tab->shape[1], N = n->src[1]->shape[0];
    bool quant = enc_dtype_is_quantized(tab->dtype); /* get_rows_q.comp: p[2] the bytes of a row */
    uint32_t p[] = {(uint32_t)N, (uint32_t)D, quant ? (uint32_t)vk__row_bytes(tab, D) : (uint32_t)tab->dtype,
                    (uint32_t)tab->shape[0], (uint32_t)r0, (uint32_t)nw};
    memcpy(d->push.p, p, sizeof p);
    d->qtype = quant ? tab->dtype : ENC_F32;
    vk__grid_1d(d, N * D, 256);
    return ENC_OK;
}

static enc_status vk__get_rows(vk__plan *pl)
{
    return vk__windowed(pl, pl->n->src[0], 0, pl->n->src[1], 1, vk__get_rows_window);
}

static enc_status vk__matmul_window(const vk__plan *pl, vk_dispatch *d, int64_t n0, int64_t nw)
{
    const graph_node *n = pl->n;
    const graph_tensor *x = n->src[0], *w = n->src[1];
    int64_t T = x->shape[0], K = x->shape[1], N = w->shape[0];
    size_t rb = (size_t)K * enc_dtype_size(w->dtype);
    /* The vector path (matmul.comp): 16-byte loads through texel views,
     * where rows and tokens start on 16 bytes. The choice depends on the
     * shapes and the layout only, never on the number of tokens. */
    bool vec = pl->c->texels && K % (w->dtype == ENC_F32 ? 4 : 8) == 0 && w->offset % VK_TEXEL_BYTES == 0 &&
               x->offset % VK_TEXEL_BYTES == 0;
    if (vec) {
        ENC_TRY(vk__bind_texels(pl, d, 0, w, (size_t)n0 * rb, (size_t)nw * rb));
        ENC_TRY(vk__bind_texels(pl, d, 1, x, 0, graph_tensor_nbytes(x)));
    }
    uint32_t p[] = {(uint32_t)T, (uint32_t)K, (uint32_t)N, (uint32_t)w->dtype, (uint32_t)n0, (uint32_t)nw, vec};
    memcpy(d->push.p, p, sizeof p);
    d->groups[0] = (uint32_t)((nw + VK__MATMUL_RPW - 1) / VK__MATMUL_RPW);
    d->groups[1] = (uint32_t)T; /* zero groups: nothing runs */
    return ENC_OK;
}

/* Grids hold at most VK__GRID_MAX groups per dimension: one per token. */
static enc_status vk__check_tokens(const vk__plan *pl, int64_t T)
{
    if (T <= VK__GRID_MAX) return ENC_OK;
    return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: %s of %lld tokens: at most %d per step (lower "
                    "--max-num-batched-tokens)", graph_op_name(pl->n->op), (long long)T, VK__GRID_MAX);
}

static enc_status vk__matmul(vk__plan *pl)
{
    const graph_tensor *w = pl->n->src[1];
    ENC_TRY(vk__check_tokens(pl, pl->n->src[0]->shape[0]));
    return vk__windowed(pl, w, 1, pl->n->src[0], 0,
                        enc_dtype_is_quantized(w->dtype) ? vk__matmul_q_window : vk__matmul_window);
}

static enc_status vk__rms_norm(vk__plan *pl)
{
    const graph_node *n = pl->n;
    int64_t dim = n->src[1]->shape[0], rows = graph_tensor_nelements(n->src[0]) / dim;
    const graph_tensor *ts[] = {n->src[0], n->src[1], n->dst};
    int64_t rpw = pl->c->subgroup ? VK__NORM_RPW_SUBGROUP : 1, per = VK__GRID_MAX * rpw; /* rows per workgroup */
    for (int64_t r0 = 0; r0 < rows; r0 += per) {
        vk_dispatch *d = NULL;
        ENC_TRY(vk__single(pl, ts, 3, &d));
        uint32_t p[] = {(uint32_t)rows, (uint32_t)dim, vk__f32_bits(n->f[0]), (uint32_t)r0};
        memcpy(d->push.p, p, sizeof p);
        d->groups[0] = (uint32_t)(((rows - r0 < per ? rows - r0 : per) + rpw - 1) / rpw);
    }
    return ENC_OK;
}

static enc_status vk__rope(vk__plan *pl)
{
    const graph_node *n = pl->n;
    vk_dispatch *d = NULL;
    ENC_TRY(vk__single(pl, (const graph_tensor *const[]){n->src[0], n->src[1]}, 2, &d));
    int64_t T = n->src[0]->shape[0], H = n->i[0], hd = n->i[1];
    enc_rope r = graph_rope_of(n);
    uint32_t p[] = {(uint32_t)T,
                    (uint32_t)H,
                    (uint32_t)hd,
                    vk__f32_bits(log2(r.theta)),
                    vk__f32_bits(1.0 - 1.0 / r.factor),
                    vk__f32_bits(r.low),
                    vk__f32_bits(r.high - r.low),
                    vk__f32_bits(r.attn)};
    memcpy(d->push.p, p, sizeof p);
    vk__grid_1d(d, T * H * (hd / 2), 256);
    return ENC_OK;
}

/* swiglu and add: three tensors of n elements. */
static enc_status vk__elementwise(vk__plan *pl)
{
    const graph_node *n = pl->n;
    vk_dispatch *d = NULL;
    ENC_TRY(vk__single(pl, (const graph_tensor *const[]){n->src[0], n->src[1], n->dst}, 3, &d));
    int64_t count = graph_tensor_nelements(n->src[0]);
    d->push.p[0] = (uint32_t)count;
    vk__grid_1d(d, count, 256);
    return ENC_OK;
}

static int64_t vk__gcd(int64_t a, int64_t b) { return b ? vk__gcd(b, a % b) : a; }

/* Bind a KV cache [n_slots, kv_dim] (rows of f32, bf16, f16 or Q8_0 blocks,
 * as src/kv sizes them) as windows of *spw slots at bindings base ..
 * base + VK_KV_WINDOWS - 1 (shaders/common.glsl); *n_win of them. A window's
 * range is rounded up to whole words (a Q8_0 row may end mid-word; the
 * buffer holds whole words, vk_memory.c). */
static enc_status vk__bind_cache(const vk__plan *pl, vk_dispatch *d, int base, const graph_tensor *t, uint32_t *spw,
                                 uint32_t *n_windows)
{
    const vk_ctx *c = pl->c;
    backend_buffer *buf = t->buffer;
    if (t->dtype == ENC_Q8_0 && enc_dtype_row_bytes(ENC_Q8_0, t->shape[1]) == 0)
        return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: %s: KV cache '%s' of dtype q8_0 has rows of %lld elements "
                        "(whole 32-value blocks expected)", graph_op_name(pl->n->op), vk__tname(t),
                        (long long)t->shape[1]);
    if ((t->dtype == ENC_F16 || t->dtype == ENC_BF16) && t->shape[1] % 2)
        return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: %s: KV cache '%s' of dtype %s has rows of %lld elements "
                        "(an even number expected)", graph_op_name(pl->n->op), vk__tname(t),
                        enc_dtype_name(t->dtype), (long long)t->shape[1]);
    int64_t rb = (int64_t)enc_dtype_row_bytes(t->dtype, t->shape[1]), n_slots = t->shape[0], a = (int64_t)vk__align(c);
    int64_t per = (int64_t)vk__window(c) / rb, step = a / vk__gcd(rb, a); /* windows start aligned */
    per -= per % step;
    int64_t n_win = per > 0 ? (n_slots + per - 1) / per : 0;
    if (!buf || per < 1 || n_win > VK_KV_WINDOWS || t->offset % (size_t)a ||
        t->offset + graph_tensor_nbytes(t) > buf->size)
        return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: %s: KV cache '%s' of %zu bytes does not fit %d windows of "
                        "the storage buffer range of device '%s' (%u bytes each); use fewer KV blocks (--kv-blocks)",
                        graph_op_name(pl->n->op), vk__tname(t), graph_tensor_nbytes(t), VK_KV_WINDOWS,
                        c->props.deviceName, c->props.limits.maxStorageBufferRange);
    for (int64_t w = 0; w < n_win; w++) {
        int64_t first = w * per, count = n_slots - first < per ? n_slots - first : per;
        d->bufs[base + w] = buf;
        d->start[base + w] = t->offset + (size_t)(first * rb);
        d->range[base + w] = (VkDeviceSize)((count * rb + 3) / 4 * 4);
    }
    *spw = (uint32_t)(per > 0 ? per : 1);
    *n_windows = (uint32_t)n_win;
    return ENC_OK;
}

enum { VK__K_WINDOWS = VK_N_BINDINGS, VK__V_WINDOWS = VK_N_BINDINGS + VK_KV_WINDOWS };

/* The pipeline variant bits of a cache's dtype (specialization constant 3,
 * shaders/common.glsl KV_DT: 0 f32, 1 bf16, 2 f16, 3 q8_0). */
static int vk__kv_spec(const graph_tensor *cache)
{
    int dt = cache->dtype == ENC_BF16 ? 1 : cache->dtype == ENC_F16 ? 2 : cache->dtype == ENC_Q8_0 ? 3 : 0;
    return dt << VK_SPEC_KV_SHIFT;
}

static enc_status vk__store_kv(vk__plan *pl)
{
    const graph_node *n = pl->n;
    vk_dispatch *d = NULL;
    ENC_TRY(vk__single(pl, (const graph_tensor *const *)n->src, 3, &d));
    ENC_TRY(vk__bind_cache(pl, d, VK__K_WINDOWS, n->src[3], &d->push.p[2], &d->push.p[3]));
    ENC_TRY(vk__bind_cache(pl, d, VK__V_WINDOWS, n->src[4], &d->push.p[2], &d->push.p[3]));
    int64_t T = n->src[0]->shape[0], kv_dim = n->src[0]->shape[1];
    d->push.p[0] = (uint32_t)T;
    d->push.p[1] = (uint32_t)kv_dim;
    d->spec |= vk__kv_spec(n->src[3]);
    /* a word each, or a Q8_0 block of 32 values each */
    enc_dtype dt = n->src[3]->dtype;
    vk__grid_1d(d, dt == ENC_F32 ? T * kv_dim : dt == ENC_Q8_0 ? T * kv_dim / 32 : T * kv_dim / 2, 256);
    return ENC_OK;
}

enum { VK__HEAD_DIM_MAX = 256 }; /* shaders/attention.comp: HD_MAX */

static enc_status vk__attention(vk__plan *pl)
{
    const graph_node *n = pl->n;
    int64_t H = n->i[0], KVH = n->i[1], hd = n->i[2];
    ENC_TRY(vk__check_tokens(pl, n->src[0]->shape[0]));
    if (hd > VK__HEAD_DIM_MAX || hd < 1 || KVH < 1 || H % KVH)
        return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: attention with %lld heads, %lld kv heads, head_dim %lld "
                        "(head_dim <= %d and whole groups expected)", (long long)H, (long long)KVH, (long long)hd,
                        VK__HEAD_DIM_MAX);
    vk_dispatch *d = NULL; /* the caches are bound as windows below */
    const graph_tensor *ts[] = {n->src[0], NULL, NULL, n->src[3], n->src[4], n->src[5], n->dst};
    ENC_TRY(vk__single(pl, ts, 7, &d));
    uint32_t spw, n_win;
    ENC_TRY(vk__bind_cache(pl, d, VK__K_WINDOWS, n->src[1], &spw, &n_win));
    ENC_TRY(vk__bind_cache(pl, d, VK__V_WINDOWS, n->src[2], &spw, &n_win));
    int64_t T = n->src[0]->shape[0];
    /* The caches through texel views where both fit one (attention.comp's
     * texel paths, subgroup variant: 1 for an f32 cache, 4 values a texel;
     * 2 for a bf16 or f16 one, 8 values): fixed for the caches' lifetime. */
    enc_dtype kvt = n->src[1]->dtype;
    int64_t per_texel = kvt == ENC_F32 ? 4 : kvt == ENC_BF16 || kvt == ENC_F16 ? 8 : 0;
    uint32_t texels = pl->c->subgroup && per_texel && hd % per_texel == 0 && vk__texels_fit(pl->c, n->src[1]) &&
                              vk__texels_fit(pl->c, n->src[2])
                          ? (per_texel == 4 ? 1u : 2u)
                          : 0u;
    d->spec |= vk__kv_spec(n->src[1]);
    if (texels) {
        ENC_TRY(vk__bind_texels(pl, d, 0, n->src[1], 0, graph_tensor_nbytes(n->src[1])));
        ENC_TRY(vk__bind_texels(pl, d, 1, n->src[2], 0, graph_tensor_nbytes(n->src[2])));
        /* the texels a lane owns, rounded up to 1, 2, 4 or 8 (attention.comp's NT) */
        int64_t ss = pl->c->subgroup_size ? pl->c->subgroup_size : 1, per_lane = (hd / per_texel + ss - 1) / ss;
        int nt = 0;
        while (nt < 3 && (1 << nt) < per_lane) nt++;
        d->spec |= nt;
        if (pl->c->one_subgroup) d->spec |= 4;
    }
    uint32_t p[] = {(uint32_t)n->src[4]->shape[0], (uint32_t)n->src[3]->shape[1], (uint32_t)n->i[3],
                    (uint32_t)H,  (uint32_t)KVH, (uint32_t)hd, vk__f32_bits(n->f[0]), spw, n_win, texels};
    memcpy(d->push.p, p, sizeof p);
    d->groups[0] = (uint32_t)T; /* zero groups: nothing runs */
    d->groups[1] = (uint32_t)H;
    return ENC_OK;
}

static enc_status vk__argmax(vk__plan *pl)
{
    const graph_node *n = pl->n;
    vk_dispatch *d = NULL;
    ENC_TRY(vk__single(pl, (const graph_tensor *const[]){n->src[0], n->dst}, 2, &d));
    d->push.p[0] = (uint32_t)n->src[0]->shape[0];
    d->push.p[1] = (uint32_t)n->src[0]->shape[1];
    d->groups[0] = (uint32_t)n->src[0]->shape[0];
    return ENC_OK;
}

static enc_status vk__advance(vk__plan *pl)
{
    const graph_node *n = pl->n;
    vk_dispatch *d = NULL;
    const graph_tensor *ts[] = {n->src[0], n->src[1], n->src[2], n->src[3], n->src[4], n->src[5], n->dst};
    ENC_TRY(vk__single(pl, ts, 7, &d));
    d->push.p[0] = (uint32_t)n->src[0]->shape[0];
    d->push.p[1] = (uint32_t)n->src[5]->shape[1];
    d->push.p[2] = (uint32_t)n->i[0];
    vk__grid_1d(d, n->src[0]->shape[0], 64);
    return ENC_OK;
}

/* --- the device sampler ------------------------------------------------------ */

/* shaders/sample.comp reads graph_sample_row by these word offsets. */
#define VK__ROW_WORD(f, w) _Static_assert(offsetof(graph_sample_row, f) == 4 * (w), "sample.comp: " #f)
VK__ROW_WORD(temperature, 0);
VK__ROW_WORD(top_p, 2);
VK__ROW_WORD(min_p, 4);
VK__ROW_WORD(repetition_penalty, 6);
VK__ROW_WORD(presence_penalty, 8);
VK__ROW_WORD(frequency_penalty, 10);
VK__ROW_WORD(seed, 12);
VK__ROW_WORD(top_k, 14);
VK__ROW_WORD(n_prompt, 15);
VK__ROW_WORD(min_tokens, 16);
VK__ROW_WORD(n_sample, 17);
VK__ROW_WORD(n_mask, 18);
VK__ROW_WORD(flags, 19);
VK__ROW_WORD(n_top, 20);
VK__ROW_WORD(mask_ids, 21);
VK__ROW_WORD(n_bias, 53);
VK__ROW_WORD(bias, 54);
_Static_assert(GRAPH_SAMPLE_ROW_WORDS == 654 && GRAPH_SAMPLE_MAX_BIAS == 300 &&
                   sizeof(graph_sample_bias) == 8 && GRAPH_SAMPLE_LP_WORDS == 43 &&
                   GRAPH_SAMPLE_MAX_TOP == 20 &&
                   offsetof(graph_sample_logprobs, top_logprobs) == 4 * 23,
               "sample.comp: the row and logprobs layouts");

enc_status vk_sampler_check(const vk_ctx *c)
{
    const VkPhysicalDeviceLimits *l = &c->props.limits;
    if (!c->float64)
        return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: sample: device '%s' lacks shaderFloat64, which the device "
                        "sampler's arithmetic needs", c->props.deviceName);
    if (l->maxComputeWorkGroupInvocations < VK_SAMPLE_INVOCATIONS ||
        l->maxComputeWorkGroupSize[0] < VK_SAMPLE_INVOCATIONS)
        return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: sample: device '%s' runs workgroups of at most %u "
                        "invocations (the device sampler's are %d)", c->props.deviceName,
                        l->maxComputeWorkGroupInvocations, VK_SAMPLE_INVOCATIONS);
    return ENC_OK;
}

/* sample.comp's workgroup for rows of V ids, as vk_dispatch.spec
 * (8 << spec invocations; any count gives the same bits). It grows with
 * the vocabulary: lavapipe runs a workgroup as coroutines of 8 lanes and
 * pays every barrier on each (a 512-id row took about twice as long with
 * 256 invocations as with 64, and half as long again with 8 as with 64), a
 * GPU idles lanes past a row's ids, and above 32768 ids 1024 invocations
 * keep each one's loop trips under lavapipe's bound (sample.comp). The 8 of
 * a CPU device stop at 1024 ids, far inside that bound; a GPU keeps 64, a
 * subgroup or two of lanes, for small rows. */
static int vk__sample_spec(const vk_ctx *c, int64_t V)
{
    if (V > VK_SAMPLE_SMALL_VOCAB) return 7;  /* 1024 */
    if (V > VK_SAMPLE_TINY_VOCAB) return 5;   /* 256 */
    bool cpu = c->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    return cpu && V <= VK_SAMPLE_CPU_NARROW_VOCAB ? 0 /* 8 */ : 3 /* 64 */;
}

/* sample: a dispatch per `workers` rows, one workgroup per row and scratch
 * slice (vk__sample_spec), a barrier between dispatches (they share the
 * slices). */
static enc_status vk__sample(vk__plan *pl)
{
    const graph_node *n = pl->n;
    const graph_tensor *scratch = n->src[4];
    int64_t S = n->src[0]->shape[0], V = n->src[0]->shape[1], workers = scratch->shape[0];
    ENC_TRY(vk_sampler_check(pl->c));
    if (scratch->shape[1] < graph_sample_scratch_words(V))
        return enc_fail(ENC_ERR_INTERNAL,
                        "vulkan: sample: scratch '%s' has %lld words per worker (%lld needed)",
                        vk__tname(scratch), (long long)scratch->shape[1],
                        (long long)graph_sample_scratch_words(V));
    if (S > workers * VK_MAX_DISPATCHES)
        return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: sample: %lld rows in one step (at most %lld; lower "
                        "--max-num-seqs)", (long long)S, (long long)(workers * VK_MAX_DISPATCHES));
    const graph_tensor *ts[] = {n->src[0], n->src[1], n->src[2], n->src[3], scratch, n->src[5], n->src[6], n->dst};
    for (int64_t r0 = 0; r0 < S; r0 += workers) {
        vk_dispatch *d = NULL;
        ENC_TRY(vk__single(pl, ts, 8, &d));
        uint32_t p[] = {(uint32_t)S, (uint32_t)V, (uint32_t)n->src[3]->shape[1], (uint32_t)workers,
                        n->src[5] != NULL, n->src[6] != NULL, (uint32_t)scratch->shape[1], (uint32_t)r0};
        memcpy(d->push.p, p, sizeof p);
        d->groups[0] = (uint32_t)(S - r0 < workers ? S - r0 : workers);
        d->spec = vk__sample_spec(pl->c, V);
        d->barrier_after = true;
    }
    return ENC_OK;
}

/* --- mixture of experts ------------------------------------------------------ */

/* moe_route, moe_weights: one invocation per token. */
static enc_status vk__moe_route(vk__plan *pl)
{
    const graph_node *n = pl->n;
    vk_dispatch *d = NULL;
    if (n->op == GRAPH_OP_MOE_ROUTE) /* logits, ids out */
        ENC_TRY(vk__single(pl, (const graph_tensor *const[]){n->src[0], n->dst}, 2, &d));
    else /* logits, ids, weights out */
        ENC_TRY(vk__single(pl, (const graph_tensor *const[]){n->src[0], n->src[1], n->dst}, 3, &d));
    uint32_t p[] = {(uint32_t)n->src[0]->shape[0], (uint32_t)n->src[0]->shape[1], (uint32_t)n->i[0],
                    (uint32_t)n->i[1], (uint32_t)n->i[2]};
    memcpy(d->push.p, p, sizeof p);
    vk__grid_1d(d, n->src[0]->shape[0], 64);
    return ENC_OK;
}

/* matmul_id in a step of at least this many tokens groups the pairs by
 * expert (matmul_id.comp's grouping pass, then its tiles or matmul_id_q.comp's),
 * so a weight row is read once per tile of GRAPH_MOE_GROUP_TILE pairs; fewer
 * tokens (decode) take one workgroup per pair. Fixed by T at record time;
 * both give the same bits for every pair. */
enum { VK__MATMUL_ID_GROUP_MIN_T = 8 };

/* matmul_id_q.comp's pass over block-quantized experts: a tile of 1 << tile
 * pairs (vk_dispatch.spec bits 0-1; GRAPH_MOE_GROUP_TILE = 4 grouped), the
 * experts and activations through texel views where both fit (as
 * vk__matmul_q_window), one workgroup per (64 output rows, pair or tile). */
static enc_status vk__matmul_id_q(const vk__plan *pl, vk_dispatch *d, int tile, int64_t rows)
{
    const graph_tensor *x = pl->n->src[0], *w = pl->n->src[1];
    d->qtype = w->dtype;
    d->spec = tile;
    if (vk__texels_cover(pl->c, w, 0, graph_tensor_nbytes(w)) &&
        vk__texels_cover(pl->c, x, 0, graph_tensor_nbytes(x))) {
        ENC_TRY(vk__bind_texels(pl, d, 0, w, 0, graph_tensor_nbytes(w)));
        ENC_TRY(vk__bind_texels(pl, d, 1, x, 0, graph_tensor_nbytes(x)));
        d->spec |= VK__SPEC_QTEX;
    }
    d->groups[0] = (uint32_t)((w->shape[1] + VK__MATMUL_Q_RPW - 1) / VK__MATMUL_Q_RPW);
    d->groups[1] = (uint32_t)rows; /* zero groups: nothing runs */
    return ENC_OK;
}

_Static_assert(GRAPH_MOE_GROUP_TILE == 1 << 2, "matmul_id_q.comp's tile of 4 pairs: spec 2");

/* The grouped path: the grouping pass (matmul_id.comp, for every weight
 * type), then one workgroup per (output column, tile), or per (64 output
 * rows, tile) over block-quantized experts; p the per-pair push constants. */
static enc_status vk__matmul_id_grouped(vk__plan *pl, const uint32_t *p, size_t np)
{
    const graph_node *n = pl->n;
    const graph_tensor *group = n->src[4], *w = n->src[1];
    int64_t pairs = p[0], tiles = (pairs + GRAPH_MOE_GROUP_TILE - 1) / GRAPH_MOE_GROUP_TILE + w->shape[0];
    if (group == NULL || graph_tensor_nelements(group) < graph_moe_group_words(pairs, w->shape[0]))
        return enc_fail(ENC_ERR_INTERNAL, "vulkan: matmul_id: tensor '%s' has no grouping scratch of %lld words",
                        vk__tname(w), (long long)graph_moe_group_words(pairs, w->shape[0]));
    ENC_TRY(vk__check_tokens(pl, tiles));
    const graph_tensor *ts[] = {n->src[0], w, n->src[2], n->dst, group};
    for (uint32_t mode = 1; mode <= 2; mode++) {
        vk_dispatch *d = NULL;
        ENC_TRY(vk__single(pl, ts, 5, &d));
        memcpy(d->push.p, p, np * sizeof *p);
        d->push.p[7] = mode;
        d->push.p[8] = (uint32_t)tiles;
        d->groups[0] = mode == 1 ? 1 : p[3];
        d->groups[1] = mode == 1 ? 1 : (uint32_t)tiles;
        d->barrier_after = mode == 1;
        if (mode == 2 && enc_dtype_is_quantized(w->dtype)) ENC_TRY(vk__matmul_id_q(pl, d, 2, tiles));
    }
    return ENC_OK;
}

/* matmul_id: one workgroup per (output column, token-slot pair), over
 * block-quantized experts per (64 output columns, pair); or grouped by
 * expert (above). */
static enc_status vk__matmul_id(vk__plan *pl)
{
    const graph_node *n = pl->n;
    const graph_tensor *x = n->src[0], *w = n->src[1], *ids = n->src[2];
    int64_t pairs = ids->shape[0] * ids->shape[1], N = w->shape[1];
    ENC_TRY(vk__weight_dtype(pl, w));
    ENC_TRY(vk__check_tokens(pl, pairs));
    if (N > VK__GRID_MAX)
        return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: matmul_id: tensor '%s' has %lld output rows (at most %d)",
                        vk__tname(w), (long long)N, VK__GRID_MAX);
    bool quant = enc_dtype_is_quantized(w->dtype); /* matmul_id_q.comp: p[4] the bytes of a row */
    uint32_t p[] = {(uint32_t)pairs, (uint32_t)ids->shape[1], (uint32_t)w->shape[2], (uint32_t)N,
                    quant ? (uint32_t)vk__row_bytes(w, w->shape[2]) : (uint32_t)w->dtype, (uint32_t)w->shape[0],
                    x->n_dims == 3, 0 /* mode: per pair */};
    if (ids->shape[0] >= VK__MATMUL_ID_GROUP_MIN_T) return vk__matmul_id_grouped(pl, p, 8);
    vk_dispatch *d = NULL;
    ENC_TRY(vk__single(pl, (const graph_tensor *const[]){x, w, ids, n->dst}, 4, &d));
    memcpy(d->push.p, p, sizeof p);
    if (quant) return vk__matmul_id_q(pl, d, 0, pairs);
    d->groups[0] = (uint32_t)N;
    d->groups[1] = (uint32_t)pairs; /* zero groups: nothing runs */
    return ENC_OK;
}

/* moe_sum: one invocation per output element. */
static enc_status vk__moe_sum(vk__plan *pl)
{
    const graph_node *n = pl->n;
    const graph_tensor *y = n->src[0];
    vk_dispatch *d = NULL;
    ENC_TRY(vk__single(pl, (const graph_tensor *const[]){y, n->src[1], n->dst}, 3, &d));
    uint32_t p[] = {(uint32_t)y->shape[0], (uint32_t)y->shape[1], (uint32_t)y->shape[2]};
    memcpy(d->push.p, p, sizeof p);
    vk__grid_1d(d, y->shape[0] * y->shape[2], 256);
    return ENC_OK;
}

enc_status vk_ops_plan(const vk_ctx *c, const graph_node *n, vk_dispatch *out, int *n_out)
{
    vk__plan pl = {c, n, out, 0};
    enc_status s;
    switch (n->op) {
    case GRAPH_OP_GET_ROWS: s = vk__get_rows(&pl); break;
    case GRAPH_OP_RMS_NORM: s = vk__rms_norm(&pl); break;
    case GRAPH_OP_MATMUL: s = vk__matmul(&pl); break;
    case GRAPH_OP_ROPE_NEOX: s = vk__rope(&pl); break;
    case GRAPH_OP_SWIGLU:
    case GRAPH_OP_ADD: s = vk__elementwise(&pl); break;
    case GRAPH_OP_STORE_KV: s = vk__store_kv(&pl); break;
    case GRAPH_OP_ATTENTION: s = vk__attention(&pl); break;
    case GRAPH_OP_ARGMAX: s = vk__argmax(&pl); break;
    case GRAPH_OP_DECODE_ADVANCE: s = vk__advance(&pl); break;
    case GRAPH_OP_SAMPLE: s = vk__sample(&pl); break;
    case GRAPH_OP_MOE_ROUTE:
    case GRAPH_OP_MOE_WEIGHTS: s = vk__moe_route(&pl); break;
    case GRAPH_OP_MATMUL_ID: s = vk__matmul_id(&pl); break;
    case GRAPH_OP_MOE_SUM: s = vk__moe_sum(&pl); break;
    default: s = enc_fail(ENC_ERR_INTERNAL, "vulkan: unknown op %d", (int)n->op);
    }
    *n_out = pl.n_out;
    return s;
}
