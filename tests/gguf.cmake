# GGUF: the reader and writer against each other and hand-laid bytes
# (test_gguf); bad files, lossless conversion and the tokenizer from GGUF
# metadata end to end through the encore program (test_gguf.py).
encore_add_c_test(test_gguf ${ENCORE_TESTS_DIR}/test_gguf.c)
set_tests_properties(test_gguf PROPERTIES LABELS gguf)

# encore_gguf_test(NAME CHECK ARGS...) - one check of tests/test_gguf.py.
function(encore_gguf_test name check)
  add_test(NAME ${name}
    COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_gguf.py ${check}
            --engine $<TARGET_FILE:encore> ${ARGN})
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED tiny_models LABELS gguf TIMEOUT 120)
endfunction()

# Lossless: each checkpoint written in its own type, untied f32, tied bf16,
# sharded f16, and the real Qwen3 vocabulary (whose tokenizer rides along).
encore_gguf_test(gguf_lossless_f32_untied lossless -m ${ENCORE_MODELS_DIR}/tiny-gqa1-hd64-f32 --type f32)
encore_gguf_test(gguf_lossless_bf16_tied lossless -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16 --type bf16)
encore_gguf_test(gguf_lossless_f16_sharded lossless -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd128-f16-sharded --type f16)
encore_gguf_test(gguf_lossless_qwen3vocab lossless -m ${ENCORE_MODELS_DIR}/tiny-qwen3vocab --type bf16)
encore_gguf_test(gguf_pywriter pywriter -m ${ENCORE_MODELS_DIR}/tiny-gqa4-hd128-bf16)
# What a file recommends: general.sampling.* and the end-of-generation tokens by text.
encore_gguf_test(gguf_generation generation -m ${ENCORE_MODELS_DIR}/tiny-qwen3vocab)
# RoPE scaling: YaRN's and linear scaling's keys, written by encore and by
# gguf_py as convert_hf_to_gguf.py does, read back to the same logits.
encore_gguf_test(gguf_lossless_yarn lossless -m ${ENCORE_MODELS_DIR}/tiny-yarn-bf16 --type bf16)
encore_gguf_test(gguf_pywriter_yarn pywriter -m ${ENCORE_MODELS_DIR}/tiny-yarn-bf16)
encore_gguf_test(gguf_pywriter_linear_rope pywriter -m ${ENCORE_MODELS_DIR}/tiny-linear-rope-f32)
encore_gguf_test(gguf_bad_files bad -m ${ENCORE_MODELS_DIR}/tiny-gqa1-hd64-f32)
# qwen3moe: the MoE checkpoints written by encore quantize (k = 2 of 8
# renormalised; k = 1 of 4 not) and by gguf_py, and broken MoE files.
encore_gguf_test(gguf_lossless_moe_e8k2_bf16 lossless -m ${ENCORE_MODELS_DIR}/tiny-moe-e8k2-bf16 --type bf16)
encore_gguf_test(gguf_lossless_moe_e4k1_f32 lossless -m ${ENCORE_MODELS_DIR}/tiny-moe-e4k1-f32 --type f32)
encore_gguf_test(gguf_pywriter_moe pywriter -m ${ENCORE_MODELS_DIR}/tiny-moe-e4k1-f32)
encore_gguf_test(gguf_bad_moe_files bad-moe -m ${ENCORE_MODELS_DIR}/tiny-moe-e8k2-bf16
                 --mixed ${ENCORE_MODELS_DIR}/tiny-moe-mixed-f32)
encore_gguf_test(gguf_quantized_q8_0 quantized -m ${ENCORE_MODELS_DIR}/tiny-gqa4-hd128-bf16)
# encore quantize to a block type writes what --quantize makes at load.
encore_gguf_test(gguf_blocks_q8_0 blocks -m ${ENCORE_MODELS_DIR}/tiny-gqa4-hd128-bf16 --type q8_0)
encore_gguf_test(gguf_blocks_q4_0 blocks -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16 --type q4_0)
encore_gguf_test(gguf_blocks_q4_k blocks -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-d256-bf16 --type q4_k)
# The CPU's interleaved weight layout (repack.h) against the row layout, bit
# for bit: tied (q4_0) and untied (q8_0) lm_heads, and a MoE file's dense
# matrices beside its row-layout experts.
encore_gguf_test(gguf_repack_q4_0 repack -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16 --type q4_0)
encore_gguf_test(gguf_repack_q8_0 repack -m ${ENCORE_MODELS_DIR}/tiny-gqa4-hd128-bf16 --type q8_0)
encore_gguf_test(gguf_repack_moe_q4_0 repack -m ${ENCORE_MODELS_DIR}/tiny-moe-e8k2-bf16 --type q4_0)
# The K types (rows of 256-value superblocks): every matrix Q4_K (the tied
# embedding too, read by get_rows and the lm_head), and every matrix Q6_K.
encore_gguf_test(gguf_repack_q4_k repack -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-d256-bf16 --type q4_k)
encore_gguf_test(gguf_repack_q6_k repack -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-d256-bf16 --type q6_k)
# Block types mixed per tensor, as llama-quantize's Q4_K_M writes them.
encore_gguf_test(gguf_mixed_q4_k_m mixed -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-d256-bf16)
# `encore quantize --type q4_k_m|q5_k_m`: llama-quantize's choice of type per
# tensor (nine layers untied; eight experts), the one-type files' bytes.
encore_gguf_test(gguf_mix_q4_k_m mix -m ${ENCORE_MODELS_DIR}/tiny-l9-d256-untied-bf16 --type q4_k_m)
encore_gguf_test(gguf_mix_q5_k_m mix -m ${ENCORE_MODELS_DIR}/tiny-l9-d256-untied-bf16 --type q5_k_m)
encore_gguf_test(gguf_mix_moe_q4_k_m mix -m ${ENCORE_MODELS_DIR}/tiny-moe-e8k2-d256-bf16 --type q4_k_m)
# `encore quantize -m IN.gguf`: a float GGUF rewritten as the checkpoint
# would be (dense untied and MoE), a copy over its own type, requantizing
# only when asked.
encore_gguf_test(gguf_requantize_q4_k_m requantize -m ${ENCORE_MODELS_DIR}/tiny-l9-d256-untied-bf16 --type q4_k_m)
encore_gguf_test(gguf_requantize_moe_q5_k_m requantize -m ${ENCORE_MODELS_DIR}/tiny-moe-e8k2-d256-bf16 --type q5_k_m)
# --quantize q4_k_m|q5_k_m at load: the blocks of the file encore quantize writes.
encore_gguf_test(gguf_blocks_q4_k_m blocks -m ${ENCORE_MODELS_DIR}/tiny-l9-d256-untied-bf16 --type q4_k_m)
encore_gguf_test(gguf_blocks_moe_q5_k_m blocks -m ${ENCORE_MODELS_DIR}/tiny-moe-e8k2-d256-bf16 --type q5_k_m)
# The tokenizer from GGUF metadata on the tokenizer tests' corpus and goldens.
encore_gguf_test(gguf_tokenizer tokenizer --tokenizer-dir ${ENCORE_TOKENIZER_DIR}
                 --strings ${ENCORE_TESTS_DIR}/tokenizer/strings.jsonl
                 --golden ${ENCORE_TESTS_DIR}/tokenizer/golden_qwen3.jsonl)
set_tests_properties(gguf_tokenizer PROPERTIES FIXTURES_REQUIRED "")
# The same for a sparse layer's experts (the router stays float): Q8_0 with
# rows of 32-value blocks, Q4_K with rows of 256.
encore_gguf_test(gguf_blocks_moe_q8_0 blocks -m ${ENCORE_MODELS_DIR}/tiny-moe-e8k2-bf16 --type q8_0)
encore_gguf_test(gguf_blocks_moe_q4_k blocks -m ${ENCORE_MODELS_DIR}/tiny-moe-e4k2-d256-bf16 --type q4_k)
# Q5_0, IQ4_NL and Q3_K, read as they are with the steps of the Q8_0 / Q6_K
# blocks base/quant_widen.h rewrites them as: bit for bit the file of those
# widened blocks, dense and MoE.
encore_gguf_test(gguf_widened widened -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-d256-bf16)
encore_gguf_test(gguf_widened_moe widened -m ${ENCORE_MODELS_DIR}/tiny-moe-e4k2-d256-bf16)
# IQ4_XS and Q2_K (read as they are, with IQ4_NL for rows of no whole
# 256-value block): within 5% of the model dequantized by NumPy, dense and MoE.
encore_gguf_test(gguf_iq4_xs read-as-is --type IQ4_XS -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-d256-bf16)
encore_gguf_test(gguf_iq4_xs_moe read-as-is --type IQ4_XS -m ${ENCORE_MODELS_DIR}/tiny-moe-e4k2-d256-bf16)
encore_gguf_test(gguf_q2_k read-as-is --type Q2_K -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-d256-bf16)
encore_gguf_test(gguf_q2_k_moe read-as-is --type Q2_K -m ${ENCORE_MODELS_DIR}/tiny-moe-e4k2-d256-bf16)
# Q4_1 and Q5_1 (32-value blocks with a min): the same, on 64-wide checkpoints.
encore_gguf_test(gguf_q4_1 read-as-is --type Q4_1 -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16)
encore_gguf_test(gguf_q5_1_moe read-as-is --type Q5_1 -m ${ENCORE_MODELS_DIR}/tiny-moe-e8k2-bf16)
