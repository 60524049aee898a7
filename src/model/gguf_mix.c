/* gguf_mix.c - llama-quantize's choice of a tensor's type in its Q4_K_M and
 * Q5_K_M files, for the tensors a Qwen3 or Qwen3-MoE file has (no Falcon,
 * 70B or fused-qkv cases), and a one-type file's general.file_type. */
#include "model/gguf_mix.h"

/* llama.cpp's use_more_bits: the first and last eighth of the layers and
 * every third layer between them. */
static bool gguf_mix__more_bits(int64_t layer, int64_t n_layers)
{
    return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

enc_dtype gguf_mix_type(gguf_file_type ft, gguf_role role, int64_t layer, int64_t n_layers,
                        int64_t n_experts)
{
    if (!ft.mix) return ft.base;
    switch (role) {
    case GGUF_ROLE_OUTPUT:
        return ENC_Q6_K;
    case GGUF_ROLE_ATTN_V:
        if (n_experts == 8) return ENC_Q8_0; /* "bumping this to Q8_0 trades just ~128MB" */
        return gguf_mix__more_bits(layer, n_layers) ? ENC_Q6_K : ft.base;
    case GGUF_ROLE_ATTN_K:
        return n_experts == 8 ? ENC_Q8_0 : ft.base;
    case GGUF_ROLE_ATTN_OUTPUT:
        return n_experts == 8 && ft.base == ENC_Q4_K ? ENC_Q5_K : ft.base;
    case GGUF_ROLE_FFN_DOWN:
        return gguf_mix__more_bits(layer, n_layers) ? ENC_Q6_K : ft.base;
    default:
        return ft.base;
    }
}

uint32_t gguf_mix_file_type(gguf_file_type ft)
{
    switch (ft.base) {
    case ENC_F32:
        return 0;
    case ENC_F16:
        return 1;
    case ENC_Q4_0:
        return 2;
    case ENC_Q8_0:
        return 7;
    case ENC_Q4_K:
        return ft.mix ? 15 : 14; /* Q4_K_M; Q4_K_S: every matrix Q4_K */
    case ENC_Q5_K:
        return ft.mix ? 17 : 16; /* Q5_K_M; Q5_K_S */
    case ENC_Q6_K:
        return 18;
    default:
        return 32; /* BF16 */
    }
}
