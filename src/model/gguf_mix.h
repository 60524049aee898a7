/* gguf_mix.h - the type of each tensor of a GGUF file written by `encore
 * quantize`: one type for every matrix, or one of llama-quantize's K mixes
 * (Q4_K_M, Q5_K_M), which give the output matrix and some layers' attn_v and
 * ffn_down Q6_K, as llama.cpp's llama_tensor_get_type does for them. */
#ifndef ENC_MODEL_GGUF_MIX_H
#define ENC_MODEL_GGUF_MIX_H

#include <stdbool.h>
#include <stdint.h>

#include "base/dtype.h"

/* A file's type: `base` for most matrices; `mix` true for the _M mix of
 * base (Q4_K or Q5_K). */
typedef struct gguf_file_type {
    enc_dtype base;
    bool mix;
} gguf_file_type;

/* What a matrix is, as far as the mix cares. */
typedef enum gguf_role {
    GGUF_ROLE_TOKEN_EMBD,
    GGUF_ROLE_OUTPUT, /* the lm_head; a tied token_embd is one too */
    GGUF_ROLE_ATTN_K,
    GGUF_ROLE_ATTN_V,
    GGUF_ROLE_ATTN_OUTPUT,
    GGUF_ROLE_FFN_DOWN, /* a dense layer's or a sparse layer's stacked experts */
    GGUF_ROLE_OTHER     /* attn_q, ffn_gate, ffn_up and their experts */
} gguf_role;

/* The type of a matrix of `role` in layer `layer` of n_layers, in a model of
 * n_experts experts a sparse layer (0: dense). */
enc_dtype gguf_mix_type(gguf_file_type ft, gguf_role role, int64_t layer, int64_t n_layers,
                        int64_t n_experts);

/* llama.cpp's general.file_type (enum llama_ftype) of ft. */
uint32_t gguf_mix_file_type(gguf_file_type ft);

#endif
