/* kernels_impl.h - internals of the CPU kernels: the per-ISA function table,
 * and the kernel bodies that every ISA shares.
 *
 * Part 1 (always): the table that kernels.c dispatches through, one per ISA
 * (kernels.c: portable C; kernels_avx2.c; kernels_avx512.c), and
 * cpu_kernels_force_isa() for tests and benchmarks.
 *
 * Part 2 (only where CPU__V_TABLE is defined): the matmul and attention
 * bodies, written once over a small vector vocabulary (V_LOAD, V_FMA, ...)
 * that each ISA file defines before including this header. The same source
 * thus yields the portable version (a "vector" of one float), the AVX2 one
 * (8 lanes) and the AVX-512 one (16 lanes).
 *
 * The fixed order of every dot product (the heart of batch invariance):
 *
 *     k:    [ VW lanes ][ VW lanes ] ... [ VW lanes ][ tail, zero-padded ]
 *     acc:  P = CPU__V_P VW-lane accumulators, each over its own run of
 *           consecutive blocks (cpu__v_class_start: P near-equal runs, the
 *           tail in the last), acc[c] = fma(x_blk, w_blk, acc[c]), block by
 *           block
 *     y   = V_HSUM(acc[0] + acc[1] + ...)   (fixed trees; see cpu__tile and
 *           each ISA file)
 *
 * Register tiles of T tokens x R weight rows only share loads: each of the
 * T*R outputs has its own accumulators run through exactly the steps above,
 * so y[t, n] is the same bits whatever T, R, n_tokens, nth or the tile's
 * position. */
#ifndef ENC_CPU_KERNELS_IMPL_H
#define ENC_CPU_KERNELS_IMPL_H

#include <stdint.h>

#include "backend/cpu/kernels.h"
#include "base/dtype.h"
#include "base/quant.h"
#include "base/sample_math.h"

/* y[t, n] for every t < n_tokens and n in [n0, n1) of y = x W^T (shapes as
 * cpu_matmul). The split into ranges changes no value, only speed. */
typedef void (*cpu__matmul_rows_fn)(const float *x, int64_t n_tokens, int64_t k, const void *w,
                                    enc_dtype w_dtype, int64_t n_out, int64_t n0, int64_t n1,
                                    float *y);

/* The (ith, nth) share of cpu_paged_attention. */
typedef void (*cpu__attention_fn)(const cpu_attention_args *a, int ith, int nth);

/* w[i] = smath_exp((x[i] - max) * inv_t), 0 below min_p: smath_weights'
 * bits, whatever the ISA. */
typedef void (*cpu__sample_weights_fn)(const float *x, int64_t n, double max, double inv_t,
                                       double min_p, double *w);

/* The first index of the largest value of x[0..n), 0 when none is above
 * -inf (NaNs are never the largest). */
typedef int64_t (*cpu__argmax_fn)(const float *x, int64_t n);

/* out[i] = silu(gate[i]) * up[i] for i < n (out may be gate or up). */
typedef void (*cpu__swiglu_fn)(const float *gate, const float *up, float *out, int64_t n);

typedef struct cpu__kernel_table {
    cpu_isa isa;
    int rows_prefill;                /* weight rows per register tile, several tokens */
    int rows_decode;                 /* weight rows per register tile, one token */
    cpu__matmul_rows_fn matmul_rows; /* matmul over a range of weight rows */
    cpu__attention_fn attention;     /* paged attention */
    cpu__sample_weights_fn sample_weights; /* the sampler's weights (base/sample_math.h) */
    smath_chunk_all_fn sample_chunk;       /* a chunk record of them (smath_chunk_all's bits) */
    cpu__argmax_fn argmax;                 /* a row's argmax */
    cpu__swiglu_fn swiglu;                 /* silu(gate) * up, element by element */
} cpu__kernel_table;

extern const cpu__kernel_table cpu__kernels_scalar; /* kernels.c */
#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)
#define CPU__HAVE_X86 1
extern const cpu__kernel_table cpu__kernels_avx2;      /* kernels_avx2.c */
extern const cpu__kernel_table cpu__kernels_avx2_vnni; /* kernels_avx2.c: the same, isa avxvnni */
extern const cpu__kernel_table cpu__kernels_avx512; /* kernels_avx512.c */
#endif

/* The table every kernel goes through now (chosen once; see kernels.c). */
const cpu__kernel_table *cpu__kernels(void);

/* 1 if this CPU (and OS) can run isa. */
int cpu_isa_supported(cpu_isa isa);

/* Tests and benchmarks only: make every kernel use isa from now on. Call it
 * while no kernel runs. Returns 1, or 0 (and changes nothing) if this CPU
 * cannot run isa. */
int cpu_kernels_force_isa(cpu_isa isa);

#endif /* ENC_CPU_KERNELS_IMPL_H */

/* ------------------------------------------------------------------------ */
/* Part 2: shared kernel bodies. The including file defines:
 *
 *   CPU__V_TABLE          name of the cpu__kernel_table to define
 *   CPU__V_ISA            its cpu_isa
 *   CPU__V_TABLE_ALSO, CPU__V_ISA_ALSO  (optional) a second table of the same
 *                         kernels for another cpu_isa
 *   V, VW                 vector type and its number of float lanes
 *   CPU__V_TM, CPU__V_RM  register tile: tokens x weight rows (prefill)
 *   CPU__V_RD             weight rows per tile when a call has one token
 *   CPU__V_P              accumulators per output (1 or 2; default 1): a
 *                         one-token tile of R rows runs R * CPU__V_P
 *                         independent chains
 *   CPU__V_ACC            accumulators a tile may keep in registers at once
 *                         (default CPU__V_TM * CPU__V_RMAX)
 *   CPU__V_SAMPLE_WEIGHTS the table's sample_weights
 *   CPU__V_SAMPLE_CHUNK   the table's sample_chunk
 *   CPU__V_PV             vector accumulators of attention's weights . V step
 *                         (a multiple of 4)
 *   CPU__V_F32_ROW_OUTER  (optional) f32 tiles take one weight row at a time
 *                         (cpu__tile_block)
 *   V_ZERO()              all lanes 0
 *   V_SET1(s)             all lanes s
 *   V_LOAD(p)             VW floats from p (unaligned)
 *   V_LOAD_BF16(p)        VW bf16 from p, as f32
 *   V_LOAD_F16(p)         VW f16 from p, as f32
 *   V_LOAD_I8(p)          VW int8 from p, as f32 (exact)
 *   V_LOAD_PART(p, n)     first n < VW floats, other lanes 0 (reads only n)
 *   V_LOAD_BF16_PART(p, n), V_LOAD_F16_PART(p, n)  likewise
 *   V_STORE(p, v), V_STORE_PART(p, v, n)
 *   V_FMA(a, b, c)        a * b + c (one rounding where the ISA has FMA)
 *   V_MUL(a, b), V_ADD(a, b), V_DIV(a, b)
 *   V_SEL_NEG(c, a, b)    a in the lanes where c's sign bit is set, else b
 *   V_MAX(a, b)           a > b ? a : b lane by lane (b where either is NaN)
 *   V_ANY_EQ(v, s)        nonzero when a lane of v equals the float s
 *   V_POW2I(n)            2^n, n integral in every lane, -126 <= n <= 127
 *   V_HSUM(v)             the sum of the lanes, by a fixed tree
 */
#ifdef CPU__V_TABLE

#include <math.h>
#include <string.h>

/* The tile loops below have constant trip counts and must unroll fully, so
 * that the accumulator arrays become registers. */
#if defined(__clang__)
#define CPU__INLINE static inline __attribute__((always_inline))
#define CPU__UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define CPU__INLINE static inline __attribute__((always_inline))
#define CPU__UNROLL _Pragma("GCC unroll 16")
#else
#define CPU__INLINE static inline
#define CPU__UNROLL
#endif

#define CPU__V_RMAX (CPU__V_RD > CPU__V_RM ? CPU__V_RD : CPU__V_RM) /* rows of any tile */
#ifndef CPU__V_P
#define CPU__V_P 1
#endif
#ifndef CPU__V_ACC
#define CPU__V_ACC (CPU__V_TM * CPU__V_RMAX)
#endif

/* e^x for every lane of x <= 0 (attention's scores less their running
 * max), the same steps for every lane and call (Cephes' expf): x clamped
 * at -87 (e^-87 is still a normal f32; a NaN stays NaN), n = x log2(e)
 * rounded to an integer (adding 1.5 * 2^23 rounds it), r = x - n ln 2 in
 * two steps (ln 2's high part exact in 9 bits), e^r by a degree-7
 * polynomial, times 2^n. At most 1.26 ulp from e^x over every f32 in
 * [-87, 0] (measured against double exp, with FMA); e^0 is exactly 1. */
CPU__INLINE V cpu__v_exp(V x)
{
    const V round = V_SET1(12582912.0f); /* 1.5 * 2^23 */
    x = V_MAX(V_SET1(-87.0f), x); /* the second operand where either is NaN */
    V n = V_ADD(V_FMA(x, V_SET1(1.44269504088896341f), round), V_SET1(-12582912.0f));
    V r = V_FMA(n, V_SET1(-0.693359375f), x);
    r = V_FMA(n, V_SET1(2.12194440e-4f), r);
    V p = V_SET1(1.9875691500e-4f);
    p = V_FMA(p, r, V_SET1(1.3981999507e-3f));
    p = V_FMA(p, r, V_SET1(8.3334519073e-3f));
    p = V_FMA(p, r, V_SET1(4.1665795894e-2f));
    p = V_FMA(p, r, V_SET1(1.6666665459e-1f));
    p = V_FMA(p, r, V_SET1(5.0000001201e-1f));
    p = V_FMA(p, V_MUL(r, r), V_ADD(r, V_SET1(1.0f)));
    return V_MUL(p, V_POW2I(n));
}

/* --- dot-product tiles ------------------------------------------------- */

CPU__INLINE V cpu__v_load_w(enc_dtype dt, const void *w, int64_t i)
{
    if (dt == ENC_BF16) return V_LOAD_BF16((const uint16_t *)w + i);
    if (dt == ENC_F16) return V_LOAD_F16((const uint16_t *)w + i);
    return V_LOAD((const float *)w + i);
}

CPU__INLINE V cpu__v_load_w_part(enc_dtype dt, const void *w, int64_t i, int n)
{
    if (dt == ENC_BF16) return V_LOAD_BF16_PART((const uint16_t *)w + i, n);
    if (dt == ENC_F16) return V_LOAD_F16_PART((const uint16_t *)w + i, n);
    return V_LOAD_PART((const float *)w + i, n);
}

/* Bytes per weight element of the dense types the tiles read. Written out
 * (not enc_dtype_size, which lives in another file) so that it folds to a
 * constant: a call inside the decode loop spilled every accumulator and
 * cleared the upper vector halves every CPU__V_PF elements. */
CPU__INLINE size_t cpu__v_elem_size(enc_dtype dt)
{
    return dt == ENC_F32 ? 4 : 2;
}

/* A tile that streams its R rows once (a call of at most CPU__V_TM tokens:
 * one token tile per block of rows, as the few tokens of one expert in a
 * decode batch), and the rows of a matrix lie one after another: every
 * CPU__V_PF elements it asks for the same share of the bytes after its last
 * row (the next tile's). A hint only: a prefetch never faults, past the
 * matrix end included, and changes no value. (A one-token call reads its
 * rows as CPU__V_RD monotonic runs instead, which the hardware's prefetch
 * follows: cpu__v_matmul_one.) */
enum { CPU__V_PF = 32 };
_Static_assert(CPU__V_PF % (CPU__V_P * VW) == 0, "a step of every class must divide CPU__V_PF");
CPU__INLINE void cpu__v_prefetch_next(int R, enc_dtype dt, const void *last_row, int64_t k,
                                      int64_t i)
{
#if defined(__GNUC__)
    size_t es = cpu__v_elem_size(dt);
    const char *p = (const char *)last_row + (size_t)k * es + (size_t)i * R * es;
    for (size_t o = 0; o < (size_t)R * CPU__V_PF * es; o += 64)
        __builtin_prefetch(p + o, 0, 2); /* to L2 (prefetcht1): kernels_quant_impl.h says why */
#else
    (void)R, (void)dt, (void)last_row, (void)k, (void)i;
#endif
}

/* How a streaming tile asks for the bytes it reads next: not at all, the
 * next tile's rows (cpu__v_prefetch_next), or rows ahead of each of its
 * own (a one-token tile over runs, cpu__v_matmul_one). */
enum { CPU__PF_NONE = 0, CPU__PF_NEXT_TILE = 1, CPU__PF_NEXT_ROWS = 2 };
/* How many rows ahead of each of its own a CPU__PF_NEXT_ROWS tile asks for
 * (the rows of the tiles after the next): one AVX2 core of a Zen 4 EPYC
 * streamed a bf16 decode from DRAM at 16.0-19.3 GB/s one row ahead and
 * 19.0-27.9 (median 26.6) two ahead, 24.6-26.6 four ahead
 * (`build/bench_kernels 3 bf16` with this constant changed; BENCHMARKS.md). */
enum { CPU__V_PF_ROWS_AHEAD = 2 };
CPU__INLINE void cpu__v_prefetch(int mode, int R, enc_dtype dt, const void *const *wrow, int64_t k,
                                 int64_t i)
{
    if (mode == CPU__PF_NEXT_TILE) {
        cpu__v_prefetch_next(R, dt, wrow[R - 1], k, i);
        return;
    }
#if defined(__GNUC__)
    size_t es = cpu__v_elem_size(dt);
    for (int r = 0; r < R; r++) {
        const char *p = (const char *)wrow[r] + (size_t)(CPU__V_PF_ROWS_AHEAD * k + i) * es;
        for (size_t o = 0; o < (size_t)CPU__V_PF * es; o += 64)
            __builtin_prefetch(p + o, 0, 2);
    }
#else
    (void)R, (void)dt, (void)wrow, (void)k, (void)i;
#endif
}

CPU__INLINE void cpu__tile_zero(int T, int R, V acc[CPU__V_TM][CPU__V_RMAX])
{
    CPU__UNROLL for (int t = 0; t < T; t++) {
        CPU__UNROLL for (int r = 0; r < R; r++) acc[t][r] = V_ZERO();
    }
}

CPU__INLINE void cpu__tile_copy(int T, int R, V from[CPU__V_TM][CPU__V_RMAX],
                                V to[CPU__V_TM][CPU__V_RMAX])
{
    CPU__UNROLL for (int t = 0; t < T; t++) {
        CPU__UNROLL for (int r = 0; r < R; r++) to[t][r] = from[t][r];
    }
}

/* One step of a tile: the block at element o into acc[t][r] (n < VW: the
 * tail block, zero-padded; VW == 1 has none). Under CPU__V_F32_ROW_OUTER an
 * f32 tile of several tokens takes its rows one at a time, each x block
 * loaded where it is used: the same multiply-adds into the same
 * accumulators, so the same bits. */
CPU__INLINE void cpu__tile_block(int T, int R, enc_dtype dt, const float *x, int64_t ldx,
                                 const void *const *wrow, int64_t o, int n,
                                 V acc[CPU__V_TM][CPU__V_RMAX])
{
#ifdef CPU__V_F32_ROW_OUTER
    if (dt == ENC_F32 && n == VW && T > 1) {
        CPU__UNROLL for (int r = 0; r < R; r++)
        {
            V wv = V_LOAD((const float *)wrow[r] + o);
            CPU__UNROLL for (int t = 0; t < T; t++)
            {
                acc[t][r] = V_FMA(V_LOAD(x + t * ldx + o), wv, acc[t][r]);
            }
        }
        return;
    }
#endif
    V wv[CPU__V_RMAX];
    CPU__UNROLL for (int r = 0; r < R; r++) {
        wv[r] = n == VW ? cpu__v_load_w(dt, wrow[r], o) : cpu__v_load_w_part(dt, wrow[r], o, n);
    }
    CPU__UNROLL for (int t = 0; t < T; t++) {
        V xv = n == VW ? V_LOAD(x + t * ldx + o) : V_LOAD_PART(x + t * ldx + o, n);
        CPU__UNROLL for (int r = 0; r < R; r++) acc[t][r] = V_FMA(xv, wv[r], acc[t][r]);
    }
}

/* The first element of accumulator class c of a dot product of k (k for
 * c = CPU__V_P): the blocks of VW elements split into CPU__V_P runs of
 * consecutive blocks, the later runs a block longer where they do not split
 * evenly, the zero-padded tail block the last of the last run. */
CPU__INLINE int64_t cpu__v_class_start(int64_t k, int c)
{
    int64_t blocks = (k + VW - 1) / VW;
    return c >= CPU__V_P ? k : c * blocks / CPU__V_P * VW;
}

/* Every class side by side, acc[c][t][r]: the shape of a tile whose T * R
 * * P accumulators fit in registers. */
CPU__INLINE void cpu__tile_classes(int T, int R, enc_dtype dt, const float *x, int64_t ldx,
                                   const void *const *wrow, int64_t k, int prefetch,
                                   V out[CPU__V_P][CPU__V_TM][CPU__V_RMAX])
{
    V acc[CPU__V_P][CPU__V_TM][CPU__V_RMAX]; /* local: in registers, the shape GCC keeps there */
    int64_t start[CPU__V_P + 1], whole = k / VW;
    CPU__UNROLL for (int c = 0; c <= CPU__V_P; c++) start[c] = cpu__v_class_start(k, c);
    CPU__UNROLL for (int c = 0; c < CPU__V_P; c++) {
        cpu__tile_zero(T, R, acc[c]);
        int64_t w = (start[c + 1] - start[c]) / VW;
        whole = w < whole ? w : whole;
    }
    /* the whole blocks every class has, side by side... */
    for (int64_t j = 0; j < whole; j++) {
        int64_t done = j * VW * CPU__V_P; /* the share of the tile read, per row */
        if (prefetch && done % CPU__V_PF == 0) cpu__v_prefetch(prefetch, R, dt, wrow, k, done);
        CPU__UNROLL for (int c = 0; c < CPU__V_P; c++) {
            cpu__tile_block(T, R, dt, x, ldx, wrow, start[c] + j * VW, VW, acc[c]);
        }
    }
    /* ...then the rest of each: a block more in some, the tail block */
    CPU__UNROLL for (int c = 0; c < CPU__V_P; c++) {
        for (int64_t o = start[c] + whole * VW; o < start[c + 1]; o += VW) {
            int n = start[c + 1] - o < VW ? (int)(start[c + 1] - o) : VW;
            cpu__tile_block(T, R, dt, x, ldx, wrow, o, n, acc[c]);
        }
        cpu__tile_copy(T, R, acc[c], out[c]);
    }
}

/* One class, acc[t][r]. prefetch: what to ask for ahead (CPU__PF_*), all
 * of it by the end of this pass. */
CPU__INLINE void cpu__tile_class(int T, int R, int c, enc_dtype dt, const float *x, int64_t ldx,
                                 const void *const *wrow, int64_t k, int prefetch,
                                 V out[CPU__V_TM][CPU__V_RMAX])
{
    V acc[CPU__V_TM][CPU__V_RMAX];
    cpu__tile_zero(T, R, acc);
    int64_t o = cpu__v_class_start(k, c), end = cpu__v_class_start(k, c + 1);
    for (int64_t done = 0; o + VW <= end; o += VW, done += VW * CPU__V_P) {
        if (prefetch && done % CPU__V_PF == 0) cpu__v_prefetch(prefetch, R, dt, wrow, k, done);
        cpu__tile_block(T, R, dt, x, ldx, wrow, o, VW, acc);
    }
    if (o < end) cpu__tile_block(T, R, dt, x, ldx, wrow, o, (int)(end - o), acc);
    cpu__tile_copy(T, R, acc, out);
}

/* The classes done wait in memory while the next pass runs: left to itself,
 * GCC kept some of them in registers and spilled a running accumulator of
 * the 4 x 3 tile instead, a load and a store every step (seen in the
 * generated code; with blocks alternating between the classes, a layout
 * tried first, the tile ran at 37 GFLOP/s that way against 46 without). */
#if defined(__GNUC__)
#define cpu__v_keep_in_memory(p) __asm__ volatile("" : : "r"(p) : "memory")
#else
#define cpu__v_keep_in_memory(p) ((void)(p))
#endif

/* The CPU__V_P accumulators of one output, summed. */
CPU__INLINE V cpu__v_sum_classes(const V *a)
{
#if CPU__V_P == 1
    return a[0];
#elif CPU__V_P == 2
    return V_ADD(a[0], a[1]);
#else
#error "CPU__V_P must be 1 or 2"
#endif
}

/* y[t * ldy + r] = dot(x[t * ldx .. + k], wrow[r][0 .. k]) for t < T, r < R,
 * each in the fixed order of the header comment. T, R and dt are constants
 * at every call site, so the accumulators live in registers: all CPU__V_P
 * classes in one pass where T * R * CPU__V_P of them fit (a one-token tile:
 * independent chains for the loads to run ahead of), otherwise one pass per
 * class, the classes done kept aside. Either way every accumulator sees the
 * same blocks in the same order, so the bits do not depend on the shape. pf:
 * what the tile asks for ahead (CPU__PF_*). */
CPU__INLINE void cpu__tile(int T, int R, enc_dtype dt, const float *x, int64_t ldx,
                           const void *const *wrow, int64_t k, float *y, int64_t ldy, int pf)
{
    V acc[CPU__V_P][CPU__V_TM][CPU__V_RMAX];
    if (CPU__V_P == 1 || T * R * CPU__V_P <= CPU__V_ACC) {
        cpu__tile_classes(T, R, dt, x, ldx, wrow, k, pf, acc);
    } else {
        CPU__UNROLL for (int c = 0; c < CPU__V_P; c++) {
            cpu__tile_class(T, R, c, dt, x, ldx, wrow, k, c == 0 ? pf : CPU__PF_NONE, acc[c]);
            cpu__v_keep_in_memory(acc);
        }
    }
    CPU__UNROLL for (int t = 0; t < T; t++) {
        CPU__UNROLL for (int r = 0; r < R; r++) {
            V a[CPU__V_P];
            CPU__UNROLL for (int c = 0; c < CPU__V_P; c++) a[c] = acc[c][t][r];
            y[t * ldy + r] = V_HSUM(cpu__v_sum_classes(a));
        }
    }
}

/* The tile shapes a call may need: T in [1, TM] with R = RM or 1, and
 * 1 x RD for single-token calls; any other shape goes one output at a time.
 * dt is a constant at each call site (the three wrappers below). */
#define CPU__TILE_CASE(T_, R_)                                                                     \
    case (T_) * 64 + (R_):                                                                           \
        cpu__tile(T_, R_, dt, x, ldx, wrow, k, y, ldy, pf);                                        \
        return

CPU__INLINE void cpu__tiles(enc_dtype dt, int T, int R, const float *x, int64_t ldx,
                            const void *const *wrow, int64_t k, float *y, int64_t ldy, int pf)
{
    switch (T * 64 + R) {
#if CPU__V_RD != CPU__V_RM
        CPU__TILE_CASE(1, CPU__V_RD);
#endif
        CPU__TILE_CASE(1, CPU__V_RM);
        CPU__TILE_CASE(1, 1);
#if CPU__V_TM >= 2
        CPU__TILE_CASE(2, CPU__V_RM);
        CPU__TILE_CASE(2, 1);
#endif
#if CPU__V_TM >= 3
        CPU__TILE_CASE(3, CPU__V_RM);
        CPU__TILE_CASE(3, 1);
#endif
#if CPU__V_TM >= 4
        CPU__TILE_CASE(4, CPU__V_RM);
        CPU__TILE_CASE(4, 1);
#endif
#if CPU__V_TM >= 5
        CPU__TILE_CASE(5, CPU__V_RM);
        CPU__TILE_CASE(5, 1);
#endif
#if CPU__V_TM >= 6
        CPU__TILE_CASE(6, CPU__V_RM);
        CPU__TILE_CASE(6, 1);
#endif
#if CPU__V_TM >= 7
        CPU__TILE_CASE(7, CPU__V_RM);
        CPU__TILE_CASE(7, 1);
#endif
#if CPU__V_TM >= 8
        CPU__TILE_CASE(8, CPU__V_RM);
        CPU__TILE_CASE(8, 1);
#endif
#if CPU__V_TM > 8
#error "CPU__V_TM must be at most 8"
#endif
    default:
        break;
    }
    for (int t = 0; t < T; t++)
        for (int r = 0; r < R; r++)
            cpu__tile(1, 1, dt, x + t * ldx, ldx, wrow + r, k, y + t * ldy + r, ldy, pf);
}

typedef void (*cpu__tile_fn)(int T, int R, const float *x, int64_t ldx, const void *const *wrow,
                             int64_t k, float *y, int64_t ldy, int pf);

#define CPU__TILES_DTYPE(NAME, DT)                                                                 \
    static void NAME(int T, int R, const float *x, int64_t ldx, const void *const *wrow,           \
                     int64_t k, float *y, int64_t ldy, int pf)                                     \
    {                                                                                              \
        cpu__tiles(DT, T, R, x, ldx, wrow, k, y, ldy, pf);                                         \
    }
CPU__TILES_DTYPE(cpu__tiles_f32, ENC_F32)
CPU__TILES_DTYPE(cpu__tiles_bf16, ENC_BF16)
CPU__TILES_DTYPE(cpu__tiles_f16, ENC_F16)

/* --- matmul ------------------------------------------------------------- */

/* Weight rows per cache block of a prefill: a block of rows (about 192 KiB,
 * whole tiles) stays in L2 while every token tile of the call passes over
 * it, and each token tile's x rows stay in L1 while the block's rows stream
 * past them from L2. (Token blocks in L2 with the rows in L1 read four x
 * rows from L2 per three weight rows: more than twice the bytes.) */
static int64_t cpu__row_block(int64_t row_bytes)
{
    int64_t n = (int64_t)192 * 1024 / (row_bytes > 0 ? row_bytes : 1);
    n = n < CPU__V_RM ? CPU__V_RM : n;
    return n / CPU__V_RM * CPU__V_RM;
}

/* One token tile x[T, k] against the weight rows [r0, r1) in tiles of RM;
 * pf: what each tile asks for ahead (cpu__tile). */
static void cpu__v_rows_tile(cpu__tile_fn tiles, int T, const float *x, int64_t k, const char *wb,
                             size_t row_bytes, int64_t r0, int64_t r1, float *y, int64_t n_out,
                             int pf)
{
    const void *wrow[CPU__V_RMAX];
    for (int64_t r = r0; r < r1; r += CPU__V_RM) {
        int R = r1 - r >= CPU__V_RM ? CPU__V_RM : (int)(r1 - r);
        for (int i = 0; i < R; i++)
            wrow[i] = wb + (size_t)(r + i) * row_bytes;
        tiles(T, R, x, k, wrow, k, y + r, n_out, pf);
    }
}

/* A call whose x rows all stay in L2 (at most CPU__V_X_L2 bytes: the 16
 * tokens of a decode batch against the lm_head, the pairs of one expert in a
 * prefill): the rows go by in groups of two row tiles, each group read from
 * memory once by the first token tile and from L1 by the others, each tile
 * prefetching the rows after its own as a one-tile call does (a hint the
 * later tiles repeat: measured, that beat the first tile alone). The row
 * blocks of the prefill order (below) read every row from L2 once per token
 * tile, none of them prefetched: an lm_head of 16 tokens in bf16 ran at 42
 * GFLOP/s that way against 59-62 in groups on one AVX2 core. */
enum { CPU__V_X_L2 = 256 * 1024 };
static void cpu__v_matmul_few(cpu__tile_fn tiles, const float *x, int64_t n_tokens, int64_t k,
                              const char *wb, size_t row_bytes, int64_t n0, int64_t n1, float *y,
                              int64_t n_out)
{
    for (int64_t g0 = n0; g0 < n1; g0 += 2 * CPU__V_RM) {
        int64_t g1 = g0 + 2 * CPU__V_RM < n1 ? g0 + 2 * CPU__V_RM : n1;
        for (int64_t t = 0; t < n_tokens; t += CPU__V_TM) {
            int T = n_tokens - t >= CPU__V_TM ? CPU__V_TM : (int)(n_tokens - t);
            cpu__v_rows_tile(tiles, T, x + t * k, k, wb, row_bytes, g0, g1, y + t * n_out, n_out,
                             CPU__PF_NEXT_TILE);
        }
    }
}

/* One token against the rows [n0, n1): the rows split into CPU__V_RD runs
 * of h consecutive rows, and tile i takes row i of each run, so the tile
 * reads CPU__V_RD monotonic streams and the hardware's prefetch follows
 * every one of them. Adjacent rows in one tile read two halves of a page
 * in turn, a pattern it did not follow: a thread's 256 KiB of an MoE
 * expert, two 2 KiB bf16 rows a tile, read at 21-22 GB/s that way with a
 * software prefetch of the next tile and at 28-29 as runs, with none. With
 * two accumulator classes (AVX2) a tile reads each row at its two halves,
 * which the hardware does not follow either: there the tile asks for the
 * rows two ahead of each of its own (CPU__PF_NEXT_ROWS), which the one-class
 * kernels run slower with (BENCHMARKS.md). Which rows share a tile changes
 * no value. */
#define CPU__V_ONE_PF (CPU__V_P == 1 ? CPU__PF_NONE : CPU__PF_NEXT_ROWS)
static void cpu__v_matmul_one(cpu__tile_fn tiles, const float *x, int64_t k, const char *wb,
                              size_t row_bytes, int64_t n0, int64_t n1, float *y)
{
    int64_t h = (n1 - n0 + CPU__V_RD - 1) / CPU__V_RD; /* rows per run */
    for (int64_t i = 0; i < h; i++) {
        const void *wrow[CPU__V_RMAX];
        int64_t row[CPU__V_RMAX];
        float out[CPU__V_RMAX];
        int R = 0;
        for (int j = 0; j < CPU__V_RD; j++) {
            int64_t r = n0 + j * h + i;
            if (r >= n1) break;
            row[R] = r;
            wrow[R++] = wb + (size_t)r * row_bytes;
        }
        tiles(1, R, x, k, wrow, k, out, 1, CPU__V_ONE_PF);
        for (int j = 0; j < R; j++)
            y[row[j]] = out[j];
    }
}

/* x [n_tokens, k]; w [n_out, k] of dt; y [n_tokens, n_out]; rows [n0, n1). */
static void cpu__v_matmul_rows(const float *x, int64_t n_tokens, int64_t k, const void *w,
                               enc_dtype dt, int64_t n_out, int64_t n0, int64_t n1, float *y)
{
    cpu__tile_fn tiles = dt == ENC_BF16  ? cpu__tiles_bf16
                         : dt == ENC_F16 ? cpu__tiles_f16
                                         : cpu__tiles_f32;
    size_t row_bytes = (size_t)k * cpu__v_elem_size(dt);
    const char *wb = w;
    if (n_tokens == 1) { /* decode: one token against many rows at once */
        cpu__v_matmul_one(tiles, x, k, wb, row_bytes, n0, n1, y);
        return;
    }
    if (n_tokens * k * (int64_t)sizeof(float) <= CPU__V_X_L2) {
        cpu__v_matmul_few(tiles, x, n_tokens, k, wb, row_bytes, n0, n1, y, n_out);
        return;
    }
    int64_t rb = cpu__row_block((int64_t)row_bytes);
    int pf = n_tokens <= CPU__V_TM ? CPU__PF_NEXT_TILE : CPU__PF_NONE; /* each row read once */
    for (int64_t b0 = n0; b0 < n1; b0 += rb) {
        int64_t b1 = b0 + rb < n1 ? b0 + rb : n1;
        for (int64_t t = 0; t < n_tokens; t += CPU__V_TM) {
            int T = n_tokens - t >= CPU__V_TM ? CPU__V_TM : (int)(n_tokens - t);
            cpu__v_rows_tile(tiles, T, x + t * k, k, wb, row_bytes, b0, b1, y + t * n_out, n_out,
                             pf);
        }
    }
}

/* --- paged attention ---------------------------------------------------- *
 *
 * Work item: (sequence, tile of up to QT consecutive query rows, kv head),
 * dealt round-robin to the threads. The item walks the keys in blocks of PB
 * positions starting at 0, 32, 64, ...; each key and value row of a block is
 * loaded once for all rows and query heads of the item. Per (query row,
 * head), the online softmax state (m, l, o) then goes through exactly the
 * same steps whatever the item holds: the scores of the block (each dot in
 * the fixed order of cpu__tile), its max, a rescale when the max grew,
 * weights e^(s - m) (cpu__v_exp) summed VW at a time, the lanes by V_HSUM,
 * then the tail's in position order, o += weights . v in position order.
 * So a row gives the same bits in a prefill, a decode or a batch. */

enum {
    CPU__ATT_PB = 32,       /* keys per softmax block; blocks start at multiples of 32 */
    CPU__ATT_HG = 8,        /* query heads of one kv head done together (at most) */
    CPU__ATT_QT = 16,       /* query rows of one sequence done together (at most): a
                               block's keys and values widened once for them all */
    CPU__ATT_COPY_HD = 256, /* up to this head_dim, a block's keys and values are
                               copied together first (rows 4 KiB apart thrash L1) */
    CPU__ATT_PACK_MIN_READS = 4, /* ... when this many (row, head) pairs read them */
};

/* The state of the online softmax of one query row and head. */
typedef struct cpu__att_head {
    float m;  /* running max of the scores */
    float l;  /* running sum of exp(score - m) */
    float *o; /* [head_dim] running sum of exp(score - m) * v: the out row */
} cpu__att_head;

/* The rows of one work item: query rows row0 .. row0 + nr - 1 of sequence s,
 * row r seeing ctx0 + r keys; query heads h0 .. h0 + hg - 1 of kv head kvh. */
typedef struct cpu__att_item {
    int64_t s, row0, ctx0, kvh, h0;
    int nr, hg;
} cpu__att_item;

/* The key and value rows of kv head kvh at positions [p0, p0 + pn) of
 * sequence s, found through its block table (rows of the cache's dtype; a
 * Q8_0 head is head_dim / 32 whole blocks). */
static void cpu__att_rows(const cpu_attention_args *a, const cpu__att_item *it, int64_t p0, int pn,
                          const void **krow, const void **vrow)
{
    int64_t hd = a->head_dim, kv_dim = a->n_kv_heads * hd;
    size_t slot_bytes = enc_dtype_row_bytes(a->cache_dtype, kv_dim);
    size_t head_bytes = enc_dtype_row_bytes(a->cache_dtype, hd);
    const int32_t *bt = a->block_tables + it->s * a->max_blocks;
    int64_t blk = p0 / a->block_size, in = p0 % a->block_size; /* walked, not divided per row */
    for (int i = 0; i < pn; i++) {
        int64_t slot = (int64_t)bt[blk] * a->block_size + in;
        size_t off = (size_t)slot * slot_bytes + (size_t)it->kvh * head_bytes;
        krow[i] = (const char *)a->k_cache + off;
        vrow[i] = (const char *)a->v_cache + off;
        if (++in == a->block_size) blk++, in = 0;
    }
}

/* Ask for the key and value rows of the block of keys at p0 (if the item
 * has one there) while an earlier block is computed, for a decode row of
 * any cache dtype: a head's rows lie a slot apart (kilobytes), a pattern the
 * hardware's prefetch does not follow (measured on one AVX2 core, a
 * 4096-token bf16 decode row: 3.9-4.8 GB/s without, 5.3-6.2 with). The
 * lines go to L2 (prefetcht1, as the weights' prefetches: kernels_quant_impl.h
 * says why), keys then values, for each of the CPU__ATT_PF_BLOCKS blocks
 * ahead at every block (so each block is asked for twice). On a Zen 4 EPYC,
 * a dense Q4_0 decode at depth 2048 (BENCHMARKS.md): one block ahead to L1
 * 27-30 tokens/s, to L2 32-35, two ahead once 35-37, one and two ahead
 * 36-44. The row pointers are found again for each ask (cpu__att_rows, a
 * walk of the block table: under 0.3% of the samples). A hint only; no
 * value changes. */
enum { CPU__ATT_PF_BLOCKS = 2 };
static void cpu__att_prefetch_block(const cpu_attention_args *a, const cpu__att_item *it,
                                    int64_t p0, int64_t end)
{
#if defined(__GNUC__)
    if (p0 >= end) return;
    int pn = end - p0 >= CPU__ATT_PB ? CPU__ATT_PB : (int)(end - p0);
    const void *krow[CPU__ATT_PB], *vrow[CPU__ATT_PB];
    cpu__att_rows(a, it, p0, pn, krow, vrow);
    size_t head_bytes = enc_dtype_row_bytes(a->cache_dtype, a->head_dim);
    for (int i = 0; i < pn; i++)
        for (size_t o = 0; o < head_bytes; o += 64)
            __builtin_prefetch((const char *)krow[i] + o, 0, 2);
    for (int i = 0; i < pn; i++)
        for (size_t o = 0; o < head_bytes; o += 64)
            __builtin_prefetch((const char *)vrow[i] + o, 0, 2);
#else
    (void)a, (void)it, (void)p0, (void)end;
#endif
}

/* One Q8_0 row of hd values (hd / 32 blocks) as f32, VW at a time: d * q,
 * the steps of quant_dequantize_row, so its bits (exact besides: an f16
 * times an int8 fits f32's mantissa). A scalar call per row had been 38% of
 * a Q8_0-cache decode at depth 2048 (BENCHMARKS.md). */
static void cpu__att_widen_q8_0(const void *row, float *out, int64_t hd)
{
    const block_q8_0 *b = row;
    for (int64_t j = 0; j < hd / 32; j++) {
        V d = V_SET1(enc_f16_to_f32(b[j].d));
        for (int e = 0; e < 32; e += VW)
            V_STORE(out + 32 * j + e, V_MUL(V_LOAD_I8(b[j].qs + e), d));
    }
}

/* Widen pn 16-bit key and value rows (BF16 or F16), or Q8_0 ones, into
 * kbuf, vbuf [pn, hd] f32 and point krow, vrow there; exact (a Q8_0 value
 * d * q, an f16 times an int8, fits f32's mantissa), so it changes no value. */
static void cpu__att_widen(enc_dtype dt, int64_t hd, int pn, const void **krow,
                           const void *const *vraw, const float **vrow, float *kbuf, float *vbuf)
{
    for (int i = 0; i < pn; i++) {
        float *kd = kbuf + i * hd, *vd = vbuf + i * hd;
        if (dt == ENC_Q8_0) {
            cpu__att_widen_q8_0(krow[i], kd, hd);
            cpu__att_widen_q8_0(vraw[i], vd, hd);
            krow[i] = kd;
            vrow[i] = vd;
            continue;
        }
        int64_t d = 0;
        for (; d + VW <= hd; d += VW) {
            V_STORE(kd + d, cpu__v_load_w(dt, krow[i], d));
            V_STORE(vd + d, cpu__v_load_w(dt, vraw[i], d));
        }
        for (; d < hd; d++) {
            const uint16_t *kh = krow[i], *vh = vraw[i];
            kd[d] = dt == ENC_BF16 ? enc_bf16_to_f32(kh[d]) : enc_f16_to_f32(kh[d]);
            vd[d] = dt == ENC_BF16 ? enc_bf16_to_f32(vh[d]) : enc_f16_to_f32(vh[d]);
        }
        krow[i] = kd;
        vrow[i] = vd;
    }
}

/* Copy pn key and value rows into kbuf, vbuf [pn, hd] and point the rows
 * there: every later pass over the block reads L1. Copies change no value. */
static void cpu__att_pack(int64_t hd, int pn, const void **krow, const void *const *vraw,
                          const float **vrow, float *kbuf, float *vbuf)
{
    for (int i = 0; i < pn; i++) {
        memcpy(kbuf + i * hd, krow[i], (size_t)hd * sizeof(float));
        memcpy(vbuf + i * hd, vraw[i], (size_t)hd * sizeof(float));
        krow[i] = kbuf + i * hd;
        vrow[i] = vbuf + i * hd;
    }
}

/* S[r][g][i] = q(row0 + r, h0 + g) . k_i * scale for i < pn, every row and
 * head of the item (rows whose context ends earlier ignore the extra keys);
 * the key rows are read by tiles (tiles_f32 after a widen, or those of the
 * cache's dtype in place: the same bits). Tiles run over rows (stride
 * n_heads * head_dim) x keys, or, for one query row, over its heads (stride
 * head_dim) x keys: more independent dots in flight, each the same steps. */
static void cpu__att_scores(const cpu_attention_args *a, const cpu__att_item *it,
                            cpu__tile_fn tiles, const void *const *krow, int pn, float *S)
{
    int64_t hd = a->head_dim;
    const int64_t lds = CPU__ATT_HG * CPU__ATT_PB; /* S: [QT][HG][PB] */
    const float *q0 = a->q + (it->row0 * a->n_heads + it->h0) * hd;
    for (int i = 0; i < pn; i += CPU__V_RM) {
        int R = pn - i >= CPU__V_RM ? CPU__V_RM : pn - i;
        if (it->nr == 1) {
            for (int g = 0; g < it->hg; g += CPU__V_TM) {
                int T = it->hg - g >= CPU__V_TM ? CPU__V_TM : it->hg - g;
                tiles(T, R, q0 + g * hd, hd, krow + i, hd, S + g * CPU__ATT_PB + i, CPU__ATT_PB, 0);
            }
            continue;
        }
        for (int g = 0; g < it->hg; g++)
            for (int r = 0; r < it->nr; r += CPU__V_TM) {
                int T = it->nr - r >= CPU__V_TM ? CPU__V_TM : it->nr - r;
                tiles(T, R, q0 + g * hd + r * a->n_heads * hd, a->n_heads * hd, krow + i, hd,
                      S + r * lds + g * CPU__ATT_PB + i, lds, 0);
            }
    }
    V sv = V_SET1(a->scale); /* one multiply per score, VW at a time */
    for (int r = 0; r < it->nr; r++)
        for (int g = 0; g < it->hg; g++) {
            float *s = S + r * lds + g * CPU__ATT_PB;
            int i = 0;
            for (; i + VW <= pn; i += VW)
                V_STORE(s + i, V_MUL(V_LOAD(s + i), sv));
            for (; i < pn; i++)
                s[i] *= a->scale;
        }
}

/* o[g][d0 .. d0 + C VW) += sum_i P[g][i] v_i[d0 ..] for g < GH, i = 0, 1, ...
 * in order: each lane of o is one chain of FMAs over the positions, whatever
 * GH and C; the GH x C accumulators only let heads share the loads of v and
 * keep enough independent chains in flight. The v rows are of dt (f32 after a
 * widen, or the cache's 16-bit rows in place): a widened value is exact, so
 * either gives the same bits. */
CPU__INLINE void cpu__att_pv_tile(int GH, int C, enc_dtype dt, float *const *o, const float *P,
                                  const void *const *vrow, int pn, int64_t d0)
{
    V acc[4][CPU__V_PV];
    CPU__UNROLL for (int g = 0; g < GH; g++) {
        CPU__UNROLL for (int c = 0; c < C; c++) acc[g][c] = V_LOAD(o[g] + d0 + c * VW);
    }
    for (int i = 0; i < pn; i++) {
        V v[CPU__V_PV];
        CPU__UNROLL for (int c = 0; c < C; c++) v[c] = cpu__v_load_w(dt, vrow[i], d0 + c * VW);
        CPU__UNROLL for (int g = 0; g < GH; g++) {
            V p = V_SET1(P[g * CPU__ATT_PB + i]);
            CPU__UNROLL for (int c = 0; c < C; c++) acc[g][c] = V_FMA(p, v[c], acc[g][c]);
        }
    }
    CPU__UNROLL for (int g = 0; g < GH; g++) {
        CPU__UNROLL for (int c = 0; c < C; c++) V_STORE(o[g] + d0 + c * VW, acc[g][c]);
    }
}

#if VW > 1
/* The same for one head and the last d < VW lanes (a partial vector). */
CPU__INLINE void cpu__att_pv_part(enc_dtype dt, float *o, const float *P, const void *const *vrow,
                                  int pn, int64_t d0, int n)
{
    V acc = V_LOAD_PART(o + d0, n);
    for (int i = 0; i < pn; i++)
        acc = V_FMA(V_SET1(P[i]), cpu__v_load_w_part(dt, vrow[i], d0, n), acc);
    V_STORE_PART(o + d0, acc, n);
}
#endif

#define CPU__PV_CASE(GH_, C_)                                                                      \
    case (GH_) * 64 + (C_):                                                                          \
        cpu__att_pv_tile(GH_, C_, dt, o, P, vrow, pn, d);                                          \
        break

/* o[g] += P[g] . V over all head_dim lanes, for hg heads: tiles of GH heads
 * x C vectors with GH * C = CPU__V_PV accumulators where head_dim allows.
 * dt is a constant at each call (the wrappers below). */
CPU__INLINE void cpu__att_pv_dt(enc_dtype dt, float *const *o_all, const float *P_all, int hg,
                                const void *const *vrow, int pn, int64_t hd)
{
    for (int g0 = 0; g0 < hg;) {
        int GH = hg - g0 >= 4 ? 4 : hg - g0 >= 2 ? 2 : 1;
        int C = CPU__V_PV / GH;
        while (C > 1 && C * VW > hd)
            C /= 2;
        float *const *o = o_all + g0;
        const float *P = P_all + g0 * CPU__ATT_PB;
        int64_t d = 0;
        for (; d + C * VW <= hd; d += C * VW) {
            switch (GH * 64 + C) {
                CPU__PV_CASE(1, CPU__V_PV);
                CPU__PV_CASE(1, CPU__V_PV / 2);
                CPU__PV_CASE(1, CPU__V_PV / 4);
                CPU__PV_CASE(2, CPU__V_PV / 2);
                CPU__PV_CASE(2, CPU__V_PV / 4);
                CPU__PV_CASE(4, CPU__V_PV / 4);
            default: /* a smaller head_dim: one vector at a time */
                for (int c = 0; c < C; c++)
                    for (int g = 0; g < GH; g++)
                        cpu__att_pv_tile(1, 1, dt, o + g, P + g * CPU__ATT_PB, vrow, pn,
                                         d + c * VW);
            }
        }
        for (; d + VW <= hd; d += VW)
            for (int g = 0; g < GH; g++)
                cpu__att_pv_tile(1, 1, dt, o + g, P + g * CPU__ATT_PB, vrow, pn, d);
#if VW > 1
        if (d < hd)
            for (int g = 0; g < GH; g++)
                cpu__att_pv_part(dt, o[g], P + g * CPU__ATT_PB, vrow, pn, d, (int)(hd - d));
#endif
        g0 += GH;
    }
}

typedef void (*cpu__att_pv_fn)(float *const *o, const float *P, int hg, const void *const *vrow,
                               int pn, int64_t hd);
#define CPU__ATT_PV_DTYPE(NAME, DT)                                                                \
    static void NAME(float *const *o, const float *P, int hg, const void *const *vrow, int pn,     \
                     int64_t hd)                                                                   \
    {                                                                                              \
        cpu__att_pv_dt(DT, o, P, hg, vrow, pn, hd);                                                \
    }
CPU__ATT_PV_DTYPE(cpu__att_pv_f32, ENC_F32)
CPU__ATT_PV_DTYPE(cpu__att_pv_bf16, ENC_BF16)
CPU__ATT_PV_DTYPE(cpu__att_pv_f16, ENC_F16)

/* Fold one block of pn keys into the state of hg heads of one query row:
 * S[g][i] holds the scores and is overwritten by the weights. */
static void cpu__att_fold(const cpu_attention_args *a, cpu__att_head *hs, int hg, cpu__att_pv_fn pv,
                          const void *const *vrow, int pn, float *S)
{
    int64_t hd = a->head_dim;
    float *o[CPU__ATT_HG];
    for (int g = 0; g < hg; g++) {
        float *s = S + g * CPU__ATT_PB;
        float m = hs[g].m, l = hs[g].l;
        for (int i = 0; i < pn; i++)
            m = s[i] > m ? s[i] : m;
        if (m > hs[g].m && hs[g].m != -INFINITY) { /* a new max: rescale what we have */
            float c = expf(hs[g].m - m);
            l *= c;
            V cv = V_SET1(c);
            int64_t d = 0;
            for (; d + VW <= hd; d += VW)
                V_STORE(hs[g].o + d, V_MUL(V_LOAD(hs[g].o + d), cv));
            for (; d < hd; d++)
                hs[g].o[d] *= c;
        }
        V neg_m = V_SET1(-m), lv = V_ZERO(); /* weights e^(s - m), VW at a time */
        int i = 0;
        for (; i + VW <= pn; i += VW) {
            V e = cpu__v_exp(V_ADD(V_LOAD(s + i), neg_m));
            V_STORE(s + i, e);
            lv = V_ADD(lv, e);
        }
        l += V_HSUM(lv);
        if (i < pn) { /* the tail's lanes past pn are never stored nor summed */
            V_STORE_PART(s + i, cpu__v_exp(V_ADD(V_LOAD_PART(s + i, pn - i), neg_m)), pn - i);
            for (; i < pn; i++)
                l += s[i];
        }
        hs[g].m = m;
        hs[g].l = l;
        o[g] = hs[g].o;
    }
    pv(o, S, hg, vrow, pn, hd);
}

/* One work item, start to finish: out rows start at 0 and end as o / l. */
static void cpu__att_item_run(const cpu_attention_args *a, const cpu__att_item *it)
{
    int64_t hd = a->head_dim;
    cpu__att_head hs[CPU__ATT_QT][CPU__ATT_HG];
    for (int r = 0; r < it->nr; r++)
        for (int g = 0; g < it->hg; g++) {
            hs[r][g].m = -INFINITY;
            hs[r][g].l = 0.0f;
            hs[r][g].o = a->out + ((it->row0 + r) * a->n_heads + it->h0 + g) * hd;
            memset(hs[r][g].o, 0, (size_t)hd * sizeof(float));
        }
    int64_t end = it->ctx0 + it->nr - 1; /* the keys the last row sees */
    float S[CPU__ATT_QT * CPU__ATT_HG * CPU__ATT_PB];
    const void *krow[CPU__ATT_PB], *vraw[CPU__ATT_PB];
    const float *vrow[CPU__ATT_PB];
    float kbuf[CPU__ATT_PB * CPU__ATT_COPY_HD], vbuf[CPU__ATT_PB * CPU__ATT_COPY_HD];
    /* Packing pays when the rows are read again by several (row, head) pairs;
     * for one or two (a decode row of a small GQA group) the copy is more
     * traffic than it saves. A Q8_0 cache is always widened into the buffers
     * (head_dim <= CPU__ATT_COPY_HD, graph_attention checks), a 16-bit one
     * when several query rows read it; one query row (a decode) reads 16-bit
     * rows where they lie, widening each value as it loads it. */
    enc_dtype dt = a->cache_dtype;
    int direct = it->nr == 1 && dt != ENC_Q8_0;
    int widen = !direct && dt != ENC_F32;
    int pack =
        !widen && !direct && hd <= CPU__ATT_COPY_HD && it->nr * it->hg >= CPU__ATT_PACK_MIN_READS;
    enc_dtype rows_dt = direct ? dt : ENC_F32; /* the dtype krow, vrow point at */
    cpu__tile_fn tiles = rows_dt == ENC_BF16  ? cpu__tiles_bf16
                         : rows_dt == ENC_F16 ? cpu__tiles_f16
                                              : cpu__tiles_f32;
    cpu__att_pv_fn pv = rows_dt == ENC_BF16  ? cpu__att_pv_bf16
                        : rows_dt == ENC_F16 ? cpu__att_pv_f16
                                             : cpu__att_pv_f32;
    for (int64_t p0 = 0; p0 < end; p0 += CPU__ATT_PB) {
        int pn = end - p0 >= CPU__ATT_PB ? CPU__ATT_PB : (int)(end - p0);
        if (it->nr == 1) /* a decode row: ask for the blocks ahead */
            for (int d = 1; d <= CPU__ATT_PF_BLOCKS; d++)
                cpu__att_prefetch_block(a, it, p0 + d * CPU__ATT_PB, end);
        cpu__att_rows(a, it, p0, pn, krow, vraw);
        if (widen)
            cpu__att_widen(dt, hd, pn, krow, vraw, vrow, kbuf, vbuf);
        else if (pack)
            cpu__att_pack(hd, pn, krow, vraw, vrow, kbuf, vbuf);
        else if (!direct)
            for (int i = 0; i < pn; i++) vrow[i] = vraw[i];
        const void *const *vr = direct ? vraw : (const void *const *)vrow;
        cpu__att_scores(a, it, tiles, krow, pn, S);
        for (int r = 0; r < it->nr; r++) {
            int64_t left = it->ctx0 + r - p0; /* keys of this block row r sees */
            if (left > 0)
                cpu__att_fold(a, hs[r], it->hg, pv, vr, left < pn ? (int)left : pn,
                              S + r * CPU__ATT_HG * CPU__ATT_PB);
        }
    }
    for (int r = 0; r < it->nr; r++) {
        if (it->ctx0 + r <= 0) continue; /* padding: the zero row stays */
        for (int g = 0; g < it->hg; g++) {
            float inv = 1.0f / hs[r][g].l;
            for (int64_t d = 0; d < hd; d++)
                hs[r][g].o[d] *= inv;
        }
    }
}

/* Deal the work items round-robin: item i goes to thread i % nth. */
static void cpu__v_attention(const cpu_attention_args *a, int ith, int nth)
{
    int64_t group = a->n_heads / a->n_kv_heads, item = 0;
    for (int64_t s = 0; s < a->n_seqs; s++) {
        int64_t q0 = a->query_start_loc[s], n_q = a->query_start_loc[s + 1] - q0;
        for (int64_t j = 0; j < n_q; j += CPU__ATT_QT)
            for (int64_t kvh = 0; kvh < a->n_kv_heads; kvh++)
                for (int64_t g = 0; g < group; g += CPU__ATT_HG, item++) {
                    if (item % nth != ith) continue;
                    cpu__att_item it = {
                        .s = s,
                        .row0 = q0 + j,
                        .ctx0 = (int64_t)a->seq_lens[s] - n_q + j + 1,
                        .kvh = kvh,
                        .h0 = kvh * group + g,
                        .nr = n_q - j >= CPU__ATT_QT ? CPU__ATT_QT : (int)(n_q - j),
                        .hg = group - g >= CPU__ATT_HG ? CPU__ATT_HG : (int)(group - g),
                    };
                    cpu__att_item_run(a, &it);
                }
    }
}

/* --- argmax ---------------------------------------------------------------- */

/* The table's argmax (cpu__argmax_fn): lane maxima, four vectors at a time
 * (V_MAX keeps its second operand when the first is not above it, so a NaN
 * never enters), then the first index that holds the maximum. */
static int64_t cpu__v_argmax(const float *x, int64_t n)
{
    enum { U = 4 };
    V m[U];
    for (int u = 0; u < U; u++)
        m[u] = V_SET1(-INFINITY);
    int64_t j = 0;
    for (; j + U * VW <= n; j += U * VW)
        for (int u = 0; u < U; u++)
            m[u] = V_MAX(V_LOAD(x + j + u * VW), m[u]);
    float lane[U * VW], best = -INFINITY;
    for (int u = 0; u < U; u++)
        V_STORE(lane + u * VW, m[u]);
    for (int l = 0; l < U * VW; l++)
        best = lane[l] > best ? lane[l] : best;
    for (; j < n; j++)
        best = x[j] > best ? x[j] : best;
    if (best == -INFINITY) return 0;
    int64_t i = 0;
    while (i + VW <= n && !V_ANY_EQ(V_LOAD(x + i), best)) /* to the first vector that has it */
        i += VW;
    for (; i < n; i++)
        if (x[i] == best) return i;
    return 0;
}

/* --- swiglu ------------------------------------------------------------- */

/* silu(g) u in every lane. With z = e^-|g|, sigmoid(g) is 1 / (1 + z) for
 * g >= 0 and z / (1 + z) below: no e^x of a positive x, no cancellation. z
 * is (e^(-|g|/2))^2, so that cpu__v_exp's clamp at -87 acts only below
 * g = -174, where z is 0 in f32 anyway (with e^-|g| itself, a gate of -100
 * would give -100 e^-87 instead of about -100 e^-100). Lane by lane, so a
 * value is the same wherever a split or a tail puts it. At most 5.1 ulp from
 * a double reference over 42 million gates in [-87, 87] (u = 1), on every
 * ISA (cpu__v_exp's 1.26 ulp twice, and five roundings). */
CPU__INLINE V cpu__v_silu_mul(V g, V u)
{
    V half_neg_abs = V_MUL(V_SEL_NEG(g, g, V_MUL(g, V_SET1(-1.0f))), V_SET1(0.5f));
    V e = cpu__v_exp(half_neg_abs);
    V z = V_MUL(e, e);
    V r = V_DIV(V_SET1(1.0f), V_ADD(V_SET1(1.0f), z));
    V sigmoid = V_SEL_NEG(g, V_MUL(z, r), r);
    return V_MUL(V_MUL(g, sigmoid), u);
}

static void cpu__v_swiglu_run(const float *gate, const float *up, float *out, int64_t n)
{
    int64_t i = 0;
    for (; i + VW <= n; i += VW)
        V_STORE(out + i, cpu__v_silu_mul(V_LOAD(gate + i), V_LOAD(up + i)));
#if VW > 1
    if (i < n) {
        int m = (int)(n - i);
        V_STORE_PART(out + i, cpu__v_silu_mul(V_LOAD_PART(gate + i, m), V_LOAD_PART(up + i, m)), m);
    }
#endif
}

#define CPU__V_TABLE_OF(isa_)                                                                      \
    {                                                                                              \
        .isa = (isa_), .rows_prefill = CPU__V_RM, .rows_decode = CPU__V_RD,                        \
        .matmul_rows = cpu__v_matmul_rows, .attention = cpu__v_attention,                          \
        .sample_weights = CPU__V_SAMPLE_WEIGHTS, .sample_chunk = CPU__V_SAMPLE_CHUNK,              \
        .argmax = cpu__v_argmax, .swiglu = cpu__v_swiglu_run,                                      \
    }
const cpu__kernel_table CPU__V_TABLE = CPU__V_TABLE_OF(CPU__V_ISA);
#ifdef CPU__V_TABLE_ALSO
/* The same kernels under a second ISA (CPU__V_ISA_ALSO), which differs in the
 * quantized table that cpu__quant_table_for gives it. */
const cpu__kernel_table CPU__V_TABLE_ALSO = CPU__V_TABLE_OF(CPU__V_ISA_ALSO);
#endif

#endif /* CPU__V_TABLE */
