/* kernels.c - the CPU kernels: ISA choice, portable C, and the entry points.
 *
 * cpu_kernels_init() picks the widest instruction set this CPU runs (or the
 * one ENCORE_CPU_ISA names); matmul and paged attention then go through that
 * ISA's table (kernels_impl.h), everything else is portable C here. The
 * portable matmul and attention are the shared bodies of kernels_impl.h
 * instantiated with a "vector" of one float.
 *
 * Work splits: matmul splits weight rows into contiguous tile-aligned chunks,
 * attention deals (sequence, query rows, kv head) items round-robin, the
 * other kernels split rows, tokens or elements into contiguous chunks. No
 * split changes a value (kernels.h, batch invariance). */
#include "backend/cpu/kernels.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels_bf16dot.h"
#include "backend/cpu/kernels_quant_impl.h"
#include "backend/cpu/repack.h"
#include "base/log.h"
#include "base/quant.h"
#include "base/sample_math.h"

#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)
#include <cpuid.h>
#endif

/* Each scalar expression below rounds once per operation: a contraction to
 * fma in one place and not another would break batch invariance. (GCC does
 * not contract in ISO C mode, -std=c11, which the build uses.) */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* --- the portable instantiation of the shared bodies --------------------- */

static inline float cpu__f16(const uint16_t *p)
{
    return enc_f16_to_f32(*p);
}

#define V float
#define VW 1
#define CPU__V_TM 4
#define CPU__V_RM 4
#define CPU__V_RD 4
#define CPU__V_PV 8
#define V_ZERO() 0.0f
#define V_SET1(s) (s)
#define V_LOAD(p) (*(p))
#define V_LOAD_BF16(p) enc_bf16_to_f32(*(p))
#define V_LOAD_F16(p) cpu__f16(p)
#define V_LOAD_I8(p) ((float)*(const int8_t *)(p))
#define V_LOAD_PART(p, n) ((void)(p), (void)(n), 0.0f) /* unused: no tail when VW == 1 */
#define V_LOAD_BF16_PART(p, n) ((void)(p), (void)(n), 0.0f)
#define V_LOAD_F16_PART(p, n) ((void)(p), (void)(n), 0.0f)
#define V_STORE(p, v) (*(p) = (v))
#define V_STORE_PART(p, v, n) ((void)(n), *(p) = (v))
#define V_FMA(a, b, c) ((a) * (b) + (c))
#define V_MUL(a, b) ((a) * (b))
#define V_ADD(a, b) ((a) + (b))
#define V_DIV(a, b) ((a) / (b))
#define V_SEL_NEG(c, a, b) (signbit(c) ? (a) : (b))
#define V_MAX(a, b) ((a) > (b) ? (a) : (b))
#define V_ANY_EQ(v, s) ((v) == (s))
#define V_POW2I(n) ldexpf(1.0f, (int)(n))
#define V_HSUM(v) (v)
#define CPU__V_SAMPLE_WEIGHTS smath_weights
#define CPU__V_SAMPLE_CHUNK smath_chunk_all
#define CPU__V_TABLE cpu__kernels_scalar
#define CPU__V_ISA CPU_ISA_SCALAR
#include "backend/cpu/kernels_impl.h"

/* --- ISA choice ---------------------------------------------------------- */

static const cpu__kernel_table *cpu__kt = &cpu__kernels_scalar;
static pthread_once_t cpu__once = PTHREAD_ONCE_INIT;

const char *cpu_isa_name(cpu_isa isa)
{
    switch (isa) {
    case CPU_ISA_SCALAR:
        return "scalar";
    case CPU_ISA_AVX2:
        return "avx2";
    case CPU_ISA_AVX2_VNNI:
        return "avxvnni";
    case CPU_ISA_AVX512:
        return "avx512";
    case CPU_ISA_COUNT:
        break;
    }
    return "?";
}

#ifdef CPU__HAVE_X86
/* F16C (CPUID.1:ECX bit 29); __builtin_cpu_supports has no name for it in clang 14. */
static int cpu__has_f16c(void)
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & (1u << 29)) != 0;
}

/* AVX-VNNI (CPUID.(EAX=7, ECX=1):EAX bit 4), where this build has its kernels. */
static int cpu__has_avx_vnni(void)
{
#ifdef ENCORE_HAVE_AVXVNNI
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return 0;
    return (eax & (1u << 4)) != 0;
#else
    return 0;
#endif
}

/* CPUID once (in a VM each CPUID traps to the hypervisor; the backend asks
 * per matmul it prepares). */
static int cpu__has_avx512_bf16(void)
{
#ifdef ENCORE_HAVE_AVX512BF16
    static _Atomic int known = -1;
    int has = known;
    if (has < 0) {
        unsigned eax, ebx, ecx, edx;
        has = __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5)) != 0;
        known = has;
    }
    return has;
#else
    return 0;
#endif
}
#endif

int cpu_isa_supported(cpu_isa isa)
{
    switch (isa) {
    case CPU_ISA_SCALAR:
        return 1;
#ifdef CPU__HAVE_X86
    case CPU_ISA_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu__has_f16c();
    case CPU_ISA_AVX2_VNNI:
        return cpu_isa_supported(CPU_ISA_AVX2) && cpu__has_avx_vnni();
    case CPU_ISA_AVX512:
        __builtin_cpu_init();
        return cpu_isa_supported(CPU_ISA_AVX2) && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#endif
    default:
        return 0;
    }
}

static const cpu__kernel_table *cpu__table_of(cpu_isa isa)
{
#ifdef CPU__HAVE_X86
    if (isa == CPU_ISA_AVX512) return &cpu__kernels_avx512;
    if (isa == CPU_ISA_AVX2_VNNI) return &cpu__kernels_avx2_vnni;
    if (isa == CPU_ISA_AVX2) return &cpu__kernels_avx2;
#endif
    (void)isa;
    return &cpu__kernels_scalar;
}

static void cpu__choose(void)
{
    cpu_isa best = cpu_isa_supported(CPU_ISA_AVX512)      ? CPU_ISA_AVX512
                   : cpu_isa_supported(CPU_ISA_AVX2_VNNI) ? CPU_ISA_AVX2_VNNI
                   : cpu_isa_supported(CPU_ISA_AVX2)      ? CPU_ISA_AVX2
                                                          : CPU_ISA_SCALAR;
    cpu_isa isa = best;
    const char *env = getenv("ENCORE_CPU_ISA");
    if (env && *env) {
        cpu_isa want = CPU_ISA_SCALAR;
        int known = 1;
        if (strcmp(env, "avx512") == 0)
            want = CPU_ISA_AVX512;
        else if (strcmp(env, "avxvnni") == 0)
            want = CPU_ISA_AVX2_VNNI;
        else if (strcmp(env, "avx2") == 0)
            want = CPU_ISA_AVX2;
        else if (strcmp(env, "scalar") != 0)
            known = 0;
        if (!known)
            enc_log_warn("ENCORE_CPU_ISA=%s: expected avx512, avxvnni, avx2 or scalar; using %s",
                         env, cpu_isa_name(best));
        else if (!cpu_isa_supported(want))
            enc_log_warn("ENCORE_CPU_ISA=%s: this CPU cannot run it; using %s", env,
                         cpu_isa_name(best));
        else
            isa = want;
    }
    cpu__kt = cpu__table_of(isa);
    enc_log_debug("cpu kernels: %s", cpu_isa_name(isa));
}

static const cpu__kernel_table *cpu__table(void)
{
    pthread_once(&cpu__once, cpu__choose);
    return cpu__kt;
}

const cpu__kernel_table *cpu__kernels(void)
{
    return cpu__table();
}

cpu_isa cpu_kernels_init(void)
{
    return cpu__table()->isa;
}

int cpu_kernels_force_isa(cpu_isa isa)
{
    cpu__table();
    if (!cpu_isa_supported(isa)) return 0;
    cpu__kt = cpu__table_of(isa);
    return 1;
}

/* --- work splits ---------------------------------------------------------- */

/* [*i0, *i1): the ith of nth contiguous chunks of [0, n), chunk starts
 * multiples of align. */
static void cpu__split(int64_t n, int64_t align, int ith, int nth, int64_t *i0, int64_t *i1)
{
    int64_t per = (n + nth - 1) / nth;
    per = (per + align - 1) / align * align;
    int64_t a = per * ith, b = a + per;
    *i0 = a < n ? a : n;
    *i1 = b < n ? b : n;
}

static int64_t cpu__gcd(int64_t a, int64_t b)
{
    return b ? cpu__gcd(b, a % b) : a;
}

/* --- matmul -------------------------------------------------------------- */

static void cpu__matmul(const void *x, int64_t n_tokens, int64_t k, const void *w,
                        enc_dtype w_dtype, int64_t n_out, float *y, int ith, int nth, int packed)
{
    const cpu__kernel_table *kt = cpu__table();
    int64_t rp = kt->rows_prefill, rd = kt->rows_decode;
    int64_t align = rp / cpu__gcd(rp, rd) * rd; /* whole tiles of either shape */
    if (packed) align = align / cpu__gcd(align, CPU_REPACK_ROWS) * CPU_REPACK_ROWS; /* and groups */
    int64_t n0, n1;
    cpu__split(n_out, align, ith, nth, &n0, &n1);
    if (n0 >= n1 || n_tokens <= 0) return;
    if (enc_dtype_is_quantized(w_dtype))
        cpu__matmul_quant(cpu__quant_table_for(kt->isa), x, n_tokens, k, w, w_dtype, n_out, n0, n1,
                          y, packed);
    else
        kt->matmul_rows(x, n_tokens, k, w, w_dtype, n_out, n0, n1, y);
}

void cpu_matmul(const void *x, int64_t n_tokens, int64_t k, const void *w, enc_dtype w_dtype,
                int64_t n_out, float *y, int ith, int nth)
{
    cpu__matmul(x, n_tokens, k, w, w_dtype, n_out, y, ith, nth, 0);
}

void cpu_matmul_packed(const void *x, int64_t n_tokens, int64_t k, const void *w,
                       enc_dtype w_dtype, int64_t n_out, float *y, int ith, int nth)
{
    cpu__matmul(x, n_tokens, k, w, w_dtype, n_out, y, ith, nth, 1);
}

bool cpu_bf16_activations_supported(void)
{
#ifdef CPU__HAVE_X86
    return cpu_kernels_init() == CPU_ISA_AVX512 && cpu__has_avx512_bf16();
#else
    return false;
#endif
}

void cpu_matmul_bf16x(const uint16_t *x, int64_t n_tokens, int64_t k, const uint16_t *w,
                      int64_t n_out, float *y, int ith, int nth)
{
#if defined(CPU__HAVE_X86) && defined(ENCORE_HAVE_AVX512BF16)
    int64_t n0, n1;
    cpu__split(n_out, 2 * cpu_bf16dot_tile_rows(), ith, nth, &n0, &n1);
    if (n0 < n1 && n_tokens > 0) cpu_bf16dot_rows(x, n_tokens, k, w, n_out, n0, n1, y);
#else
    (void)x, (void)n_tokens, (void)k, (void)w, (void)n_out, (void)y, (void)ith, (void)nth;
#endif
}

/* --- get_rows ------------------------------------------------------------ */

/* Row r of an interleaved table (repack.h) to f32: each block gathered
 * back into the row layout, then dequantized as a row's block is (blocks
 * convert one by one, so the floats of the row layout). 0, or -1. */
static int cpu__dequantize_packed_row(const void *table, enc_dtype dtype, int64_t n_rows,
                                      int64_t dim, int64_t r, float *o)
{
    union {
        block_q8_0 q8;
        block_q4_K q4k;
        block_q6_K q6k;
    } blk; /* the largest block */
    int64_t be = enc_dtype_block_elems(dtype);
    if (enc_dtype_block_bytes(dtype) > sizeof blk) return -1;
    for (int64_t b = 0; b < dim / be; b++) {
        cpu_repack_row_block(table, dtype, n_rows, dim, r, b, &blk);
        if (quant_dequantize_row(dtype, &blk, o + b * be, be) != 0) return -1;
    }
    return 0;
}

static void cpu__get_rows(const void *table, enc_dtype dtype, int64_t n_rows, int64_t dim,
                          const int32_t *ids, int64_t n, float *out, int ith, int nth, int packed)
{
    int64_t i0, i1;
    cpu__split(n, 1, ith, nth, &i0, &i1);
    size_t row_bytes = enc_dtype_row_bytes(dtype, dim);
    for (int64_t i = i0; i < i1; i++) {
        float *o = out + i * dim;
        int ok = ids[i] >= 0 && ids[i] < n_rows;
        if (ok && packed)
            ok = cpu__dequantize_packed_row(table, dtype, n_rows, dim, ids[i], o) == 0;
        else if (ok)
            ok = quant_dequantize_row(dtype, (const char *)table + (size_t)ids[i] * row_bytes, o,
                                      dim) == 0;
        if (!ok) memset(o, 0, (size_t)dim * sizeof *o);
    }
}

void cpu_get_rows(const void *table, enc_dtype dtype, int64_t n_rows, int64_t dim,
                  const int32_t *ids, int64_t n, float *out, int ith, int nth)
{
    cpu__get_rows(table, dtype, n_rows, dim, ids, n, out, ith, nth, 0);
}

void cpu_get_rows_packed(const void *table, enc_dtype dtype, int64_t n_rows, int64_t dim,
                         const int32_t *ids, int64_t n, float *out, int ith, int nth)
{
    cpu__get_rows(table, dtype, n_rows, dim, ids, n, out, ith, nth, 1);
}

/* --- rms_norm ------------------------------------------------------------ */

/* sum of x[i]^2 in double, four lanes (i mod 4) added as (l0 + l1) + (l2 + l3). */
static double cpu__sum_squares(const float *x, int64_t dim)
{
    double l[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= dim; i += 4)
        for (int j = 0; j < 4; j++)
            l[j] += (double)x[i + j] * (double)x[i + j];
    for (int j = 0; i < dim; i++, j++)
        l[j] += (double)x[i] * (double)x[i];
    return (l[0] + l[1]) + (l[2] + l[3]);
}

void cpu_rms_norm(const float *x, const float *w, int64_t rows, int64_t dim, float eps, float *y,
                  int ith, int nth)
{
    int64_t r0, r1;
    cpu__split(rows, 1, ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const float *xr = x + r * dim;
        float *yr = y + r * dim;
        float inv = (float)(1.0 / sqrt(cpu__sum_squares(xr, dim) / (double)dim + (double)eps));
        for (int64_t i = 0; i < dim; i++)
            yr[i] = xr[i] * inv * w[i];
    }
}

/* --- rope ---------------------------------------------------------------- */

enum { CPU__ROPE_CHUNK = 64 }; /* frequencies handled at once (cos/sin cached) */

/* x [n_tokens, n_heads, head_dim]; threads split the (token, head) pairs into
 * contiguous runs, so cos and sin are computed once per token and chunk.
 * The frequencies and the factor on cos and sin are rope's (base/rope.h). */
void cpu_rope_neox(float *x, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
                   const int32_t *positions, const enc_rope *rope, int ith, int nth)
{
    int64_t half = head_dim / 2;
    int64_t e0, e1;
    cpu__split(n_tokens * n_heads, 1, ith, nth, &e0, &e1);
    double inv_freq[CPU__ROPE_CHUNK], cs[2 * CPU__ROPE_CHUNK];
    for (int64_t c0 = 0; c0 < half && e0 < e1; c0 += CPU__ROPE_CHUNK) {
        int64_t cn = half - c0 < CPU__ROPE_CHUNK ? half - c0 : CPU__ROPE_CHUNK;
        for (int64_t j = 0; j < cn; j++)
            inv_freq[j] = enc_rope_inv_freq(rope, c0 + j, head_dim);
        int64_t t_cached = -1;
        for (int64_t e = e0; e < e1; e++) {
            int64_t t = e / n_heads;
            if (t != t_cached) {
                for (int64_t j = 0; j < cn; j++) {
                    double a = (double)positions[t] * inv_freq[j];
                    cs[2 * j] = cos(a) * rope->attn;
                    cs[2 * j + 1] = sin(a) * rope->attn;
                }
                t_cached = t;
            }
            float *v = x + e * head_dim;
            for (int64_t j = 0; j < cn; j++) {
                double x1 = v[c0 + j], x2 = v[c0 + j + half];
                double c = cs[2 * j], s = cs[2 * j + 1];
                v[c0 + j] = (float)(x1 * c - x2 * s);
                v[c0 + j + half] = (float)(x2 * c + x1 * s);
            }
        }
    }
}

/* --- element-wise -------------------------------------------------------- */

void cpu_swiglu(const float *gate, const float *up, float *out, int64_t n, int ith, int nth)
{
    int64_t i0, i1;
    cpu__split(n, 16, ith, nth, &i0, &i1);
    if (i0 < i1) cpu__table()->swiglu(gate + i0, up + i0, out + i0, i1 - i0);
}

void cpu_add(const float *a, const float *b, float *out, int64_t n, int ith, int nth)
{
    int64_t i0, i1;
    cpu__split(n, 16, ith, nth, &i0, &i1);
    for (int64_t i = i0; i < i1; i++)
        out[i] = a[i] + b[i];
}

/* --- KV cache ------------------------------------------------------------ */

/* n values of src into a cache row of dtype dt (16-bit types rounded to
 * nearest even; Q8_0 in blocks of 32, which never straddle two heads:
 * graph_store_kv checks head_dim). */
static void cpu__cache_row_store(enc_dtype dt, const float *src, int64_t n, void *dst)
{
    if (dt == ENC_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    if (dt == ENC_Q8_0) {
        quant_quantize_row(ENC_Q8_0, src, dst, n);
        return;
    }
    uint16_t *h = dst;
    if (dt == ENC_BF16)
        for (int64_t i = 0; i < n; i++) h[i] = enc_f32_to_bf16(src[i]);
    else
        for (int64_t i = 0; i < n; i++) h[i] = enc_f32_to_f16(src[i]);
}

void cpu_reshape_and_cache(const float *k, const float *v, int64_t n_tokens, int64_t kv_dim,
                           const int32_t *slot_mapping, enc_dtype cache_dtype, void *k_cache,
                           void *v_cache, int ith, int nth)
{
    int64_t t0, t1;
    cpu__split(n_tokens, 1, ith, nth, &t0, &t1);
    size_t row_bytes = enc_dtype_row_bytes(cache_dtype, kv_dim);
    for (int64_t t = t0; t < t1; t++) {
        int64_t slot = slot_mapping[t];
        if (slot < 0) continue;
        cpu__cache_row_store(cache_dtype, k + t * kv_dim, kv_dim, (char *)k_cache + slot * row_bytes);
        cpu__cache_row_store(cache_dtype, v + t * kv_dim, kv_dim, (char *)v_cache + slot * row_bytes);
    }
}

/* --- paged attention ----------------------------------------------------- */

void cpu_paged_attention(const cpu_attention_args *a, int ith, int nth)
{
    if (a->n_seqs <= 0 || a->n_kv_heads <= 0 || a->n_heads % a->n_kv_heads != 0) return;
    cpu__table()->attention(a, ith, nth);
}

/* --- argmax -------------------------------------------------------------- */

void cpu_argmax(const float *x, int64_t n_rows, int64_t n_cols, int32_t *out, int ith, int nth)
{
    int64_t r0, r1;
    cpu__split(n_rows, 1, ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++)
        out[r] = (int32_t)cpu__table()->argmax(x + r * n_cols, n_cols);
}
