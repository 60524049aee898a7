/* kernels.h - the CPU compute kernels of the Qwen3 step.
 *
 * Every kernel takes (ith, nth): it is called once for each share ith of nth,
 * by whichever pool thread claims that share (one thread may run several),
 * and does the ith share of the work, so the thread pool never needs to know
 * what it runs. Layouts are row-major, outermost dimension first.
 *
 * Batch invariance (DESIGN principle 5): the value computed for one token
 * never depends on nth, on how many other tokens or sequences are in the
 * call, or on whether the call is a prefill or a decode step. Every reduction
 * (dot products, norms, softmax) runs in one fixed order that depends only on
 * the reduced length (and the CPU's instruction set, chosen once per process).
 *
 * SIMD: cpu_kernels_init() picks AVX-512, AVX2+FMA+F16C (with AVX-VNNI where
 * the CPU has it) or portable C at run time
 * (ENCORE_CPU_ISA=avx512|avxvnni|avx2|scalar forces one, for tests). */
#ifndef ENC_CPU_KERNELS_H
#define ENC_CPU_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/dtype.h"
#include "base/rope.h"

typedef enum cpu_isa {
    CPU_ISA_SCALAR = 0,
    CPU_ISA_AVX2,      /* AVX2 + FMA + F16C */
    CPU_ISA_AVX2_VNNI, /* the same + AVX-VNNI: quantized dots by vpdpbusd ("avxvnni") */
    CPU_ISA_AVX512,    /* AVX-512 F/BW/VL */
    CPU_ISA_COUNT      /* the number of ISAs, narrowest first above */
} cpu_isa;

/* Detect (or read ENCORE_CPU_ISA) once; later calls return the same. */
cpu_isa cpu_kernels_init(void);
const char *cpu_isa_name(cpu_isa isa);

/* y[t, n] = sum_k x[t, k] * w[n, k]  (y = x W^T, as torch.nn.Linear).
 * w [n_out, k] of w_dtype; y [n_tokens, n_out] f32. Threads split the output
 * columns. For F32, BF16 and F16 weights x is [n_tokens, k] f32. For the
 * block types (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) x is the activations already
 * quantized by cpu_quantize_rows to quant_dot_dtype(w_dtype) (base/quant.h),
 * and the dot products are integer ones per block (kernels_quant.c). */
void cpu_matmul(const void *x, int64_t n_tokens, int64_t k, const void *w,
                enc_dtype w_dtype, int64_t n_out, float *y, int ith, int nth);

/* cpu_matmul over a w laid out by cpu_repack_matrix (repack.h: groups of 8
 * rows interleaved, for a w_dtype and shape cpu_repack_supports): the same
 * bits as cpu_matmul over the row layout; threads split whole groups. */
void cpu_matmul_packed(const void *x, int64_t n_tokens, int64_t k, const void *w,
                       enc_dtype w_dtype, int64_t n_out, float *y, int ith, int nth);

/* Whether cpu_matmul_bf16x runs here: a CPU with AVX512-BF16 whose kernels
 * are the avx512 ones (ENCORE_CPU_ISA may narrow them). */
bool cpu_bf16_activations_supported(void);

/* cpu_matmul over bf16 weights w [n_out, k] with the activations x [n_tokens,
 * k] already rounded to bf16 (cpu_quantize_rows to ENC_BF16): the products
 * by vdpbf16ps, each dot in one fixed order (kernels_bf16dot_avx512bf16.c),
 * so batch invariance holds as for cpu_matmul. Only where
 * cpu_bf16_activations_supported(). */
void cpu_matmul_bf16x(const uint16_t *x, int64_t n_tokens, int64_t k, const uint16_t *w,
                      int64_t n_out, float *y, int ith, int nth);

/* Whether cpu_matmul, cpu_matmul_packed and cpu_get_rows read weights of
 * the block type dt (every ISA has a dot for each type the portable one has). */
bool cpu_reads_block_dtype(enc_dtype dt);

/* out = x [rows, k] f32 quantized row by row to dtype (Q8_0 or Q8_K), as
 * quant_quantize_row does, or rounded to ENC_BF16 (to nearest even, as
 * enc_f32_to_bf16); threads split the rows. */
void cpu_quantize_rows(const float *x, int64_t rows, int64_t k, enc_dtype dtype,
                       void *out, int ith, int nth);

/* out[i, :] = table[ids[i], :] converted to f32.
 * table [n_rows, dim] of dtype (F32, BF16, F16, or a block type, whose rows
 * are dequantized); out [n, dim]. An id outside [0, n_rows) yields a zero
 * row (ids are checked before a step runs). */
void cpu_get_rows(const void *table, enc_dtype dtype, int64_t n_rows,
                  int64_t dim, const int32_t *ids, int64_t n, float *out,
                  int ith, int nth);

/* cpu_get_rows over a table laid out by cpu_repack_matrix (repack.h; a
 * dtype and shape cpu_repack_supports): the same floats. */
void cpu_get_rows_packed(const void *table, enc_dtype dtype, int64_t n_rows,
                         int64_t dim, const int32_t *ids, int64_t n, float *out,
                         int ith, int nth);

/* y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w[:]   (Qwen3RMSNorm).
 * x, y [rows, dim] f32 (y may equal x); w [dim] f32. Used per token (dim =
 * hidden size) and per head (rows = tokens * heads, dim = head_dim). */
void cpu_rms_norm(const float *x, const float *w, int64_t rows, int64_t dim,
                  float eps, float *y, int ith, int nth);

/* NeoX rotary embedding in place: x [n_tokens, n_heads, head_dim]; for each
 * token t and i < head_dim/2, with a = positions[t] * inv_freq(i) and m =
 * rope->attn (base/rope.h; plain RoPE: theta^(-2i/head_dim) and 1),
 * computed in double:
 *   x1 = x[i], x2 = x[i + head_dim/2]
 *   x[i] = x1 m cos a - x2 m sin a;  x[i + head_dim/2] = x2 m cos a + x1 m sin a */
void cpu_rope_neox(float *x, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
                   const int32_t *positions, const enc_rope *rope, int ith, int nth);

/* out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)), within 5.1 ulp
 * measured (kernels_impl.h, cpu__v_silu_mul); n elements. */
void cpu_swiglu(const float *gate, const float *up, float *out, int64_t n,
                int ith, int nth);

/* out[i] = a[i] + b[i]; out may alias a or b. */
void cpu_add(const float *a, const float *b, float *out, int64_t n, int ith,
             int nth);

/* Write the new keys and values into the paged cache:
 * k, v [n_tokens, kv_dim] f32; k_cache, v_cache [n_slots, kv_dim] of
 * cache_dtype (F32, or F16 / BF16 rounded to nearest even), where slot =
 * block * block_size + offset. slot_mapping[t] < 0 means "write nothing"
 * (padding rows). */
void cpu_reshape_and_cache(const float *k, const float *v, int64_t n_tokens,
                           int64_t kv_dim, const int32_t *slot_mapping,
                           enc_dtype cache_dtype, void *k_cache, void *v_cache,
                           int ith, int nth);

/* Causal paged attention for a batch of sequences, prefill and decode alike.
 * Sequence s owns query rows [query_start_loc[s], query_start_loc[s+1]) of q;
 * it has seq_lens[s] tokens in the cache (including the new ones), the new
 * ones being the last n_q = query_start_loc[s+1] - query_start_loc[s]. Query
 * row j (0-based within the sequence) attends to cache positions
 * [0, seq_lens[s] - n_q + j]. Position p of sequence s lives at slot
 * block_tables[s * max_blocks + p / block_size] * block_size + p % block_size.
 * q, out [n_tokens, n_heads, head_dim]; k_cache, v_cache [n_slots, n_kv_heads,
 * head_dim]; query head h reads kv head h / (n_heads / n_kv_heads).
 * softmax(q.k * scale) v, accumulated over positions in increasing order with
 * a fixed order inside each dot product, whatever the batch. Sequences with
 * seq_lens[s] == 0 (padding) produce zero rows. The caches hold cache_dtype
 * (F32, F16 or BF16); 16-bit rows are widened to f32 exactly before use, so
 * a 16-bit cache gives the bits an f32 cache holding the same values gives. */
typedef struct cpu_attention_args {
    const float *q;
    const void *k_cache;
    const void *v_cache;
    enc_dtype cache_dtype;
    float *out;
    const int32_t *block_tables; /* [n_seqs, max_blocks] */
    const int32_t *seq_lens;     /* [n_seqs] */
    const int32_t *query_start_loc; /* [n_seqs + 1] */
    int64_t n_seqs;
    int64_t max_blocks;
    int64_t block_size;
    int64_t n_heads;
    int64_t n_kv_heads;
    int64_t head_dim;
    float scale;
} cpu_attention_args;

void cpu_paged_attention(const cpu_attention_args *a, int ith, int nth);

/* out[s] = argmax_j x[s, j] over [n_rows, n_cols] (first index on ties). */
void cpu_argmax(const float *x, int64_t n_rows, int64_t n_cols, int32_t *out,
                int ith, int nth);

/* One step of multi-step decode bookkeeping, on the device (kernels_decode.c).
 * For the P one-token rows of a decode batch, with next[i] the token just
 * chosen for row i: a real row (seq_lens[i] > 0) moves to its next token:
 *   input_ids[i] = next[i]; positions[i] += 1; seq_lens[i] += 1;
 *   slot_mapping[i] = block_tables[i, p / block_size] * block_size + p % block_size,
 *     p = the new positions[i] (-1 when p is past the table: nothing written);
 *   out[i] = next[i].
 * Padding rows (seq_lens[i] == 0) stay as they are and get out[i] = -1. */
typedef struct cpu_advance_args {
    const int32_t *next;
    int32_t *input_ids, *positions, *seq_lens, *slot_mapping;
    const int32_t *block_tables; /* [n_rows, max_blocks] */
    int32_t *out;                /* [n_rows] */
    int64_t n_rows, max_blocks, block_size;
} cpu_advance_args;

void cpu_decode_advance(const cpu_advance_args *a, int ith, int nth);

/* The device sampler (kernels_sample.c, GRAPH_OP_SAMPLE): out[r] = the token
 * row r of logits chooses under its graph_sample_row (graph/sample_row.h).
 * The logits rows are overwritten; history rows get the chosen id. It is
 * CPU_SAMPLE_PHASES calls, phase 0, 1, 2 in order, each finished before the
 * next starts: with fewer rows than threads a row's weights are split over
 * the threads in phase 1; otherwise phase 0 does every row whole. */
enum { CPU_SAMPLE_PHASES = 3 };
typedef struct cpu_sample_args {
    float *logits;           /* [n_rows, n_vocab] */
    const int32_t *params;   /* [n_rows, GRAPH_SAMPLE_ROW_WORDS] */
    const int32_t *positions; /* [n_rows] */
    int32_t *history;        /* [n_rows, hist_len] */
    int32_t *scratch;        /* [n_workers, scratch_stride] */
    int32_t *out;            /* [n_rows] */
    int32_t *logprobs;       /* [n_rows, GRAPH_SAMPLE_LP_WORDS] or NULL */
    const uint32_t *mask;    /* [n_rows, GRAPH_SAMPLE_MASK_WORDS(n_vocab)] or NULL */
    int64_t n_rows, n_vocab, hist_len, n_workers;
    int64_t scratch_stride;  /* >= graph_sample_scratch_words(n_vocab) */
    int phase;               /* 0 .. CPU_SAMPLE_PHASES - 1 */
} cpu_sample_args;

void cpu_sample(const cpu_sample_args *a, int ith, int nth);

#endif
