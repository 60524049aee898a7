# quant.cmake - the GGUF block formats (src/base/quant.c): quantize ->
# dequantize error bounds (test_quant), and dequantization bit for bit against
# the independent NumPy dequantizers of tests/reference/gguf_quants.py
# (test_quant_numpy).
encore_add_c_test(test_quant ${ENCORE_TESTS_DIR}/test_quant.c)
set_tests_properties(test_quant PROPERTIES LABELS quant)

add_test(NAME test_quant_numpy
  COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_quant_numpy.py $<TARGET_FILE:test_quant>)
set_tests_properties(test_quant_numpy PROPERTIES LABELS quant TIMEOUT 60)

# The CPU matmul over block-quantized weights, per type and ISA: against a
# double-precision reference on the dequantized operands, batch invariance bit
# for bit, get_rows of quantized tables (tests/test_quant_kernels.c).
encore_add_c_test(test_quant_kernels ${ENCORE_TESTS_DIR}/test_quant_kernels.c)
set_tests_properties(test_quant_kernels PROPERTIES LABELS "quant;kernels")

# Checkpoints quantized at load (--quantize): logits against the NumPy reference
# on the same quantized weights and 8-bit activations (tolerance: the top
# comment of tests/test_reference.py), and bit-exact engine-vs-engine checks:
# a request alone vs in a batch, 1 vs 2 threads, and captured decode vs eager
# (capture_matrix.py). tiny-gqa4-hd128-bf16 has an untied lm_head,
# tiny-gqa2-hd64-bf16 a tied one (the quantized embedding serves both).
foreach(q q8_0 q4_0)
  string(TOUPPER ${q} Q)
  foreach(preset tiny-gqa2-hd64-bf16 tiny-gqa4-hd128-bf16)
    add_test(NAME ref_logits_${q}_${preset}
      COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_reference.py logits --quantize ${Q} --tol-rel 8e-2
              --engine $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/${preset})
    set_tests_properties(ref_logits_${q}_${preset} PROPERTIES
      FIXTURES_REQUIRED tiny_models LABELS "quant;reference" TIMEOUT 300)
  endforeach()
  add_test(NAME invariance_threads_${q}
    COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_reference.py invariance-threads --quantize ${Q}
            --engine $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16)
  set_tests_properties(invariance_threads_${q} PROPERTIES
    FIXTURES_REQUIRED tiny_models LABELS "quant;reference" TIMEOUT 300)
endforeach()
add_test(NAME invariance_batch_q8_0
  COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_reference.py invariance-batch --quantize Q8_0
          --engine $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/tiny-gqa4-hd128-bf16)
set_tests_properties(invariance_batch_q8_0 PROPERTIES
  FIXTURES_REQUIRED tiny_models LABELS "quant;reference" TIMEOUT 300)
foreach(scenario grow_shrink join_after_capture)
  add_test(NAME capture_q8_0_${scenario}
    COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/capture_matrix.py --quantize q8_0
            --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} ${scenario})
  set_tests_properties(capture_q8_0_${scenario} PROPERTIES
    FIXTURES_REQUIRED tiny_models LABELS "quant;capture" TIMEOUT 600)
endforeach()
add_test(NAME capture_q4_0_long
  COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/capture_matrix.py --quantize q4_0
          --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} long)
set_tests_properties(capture_q4_0_long PROPERTIES
  FIXTURES_REQUIRED tiny_models LABELS "quant;capture" TIMEOUT 600)

# Bad --quantize input: an unknown type is a usage error (exit 2), and so are
# rows that are no whole number of Q4_K's 256-value blocks (the type does not
# fit the model: exit 2), with a message naming the file and the tensor.
add_test(NAME quantize_refusals
  COMMAND sh -c "set -u; out=$(\"$0\" logits -m \"$1\" --quantize q5 --prompt-ids 1 2>&1); rc=$?; echo \"$out\"; \
[ $rc -eq 2 ] && echo \"$out\" | grep -q \"expected q8_0, q4_0, q4_k, q5_k, q6_k, q4_k_m or q5_k_m, got 'q5'\" || exit 1; \
out=$(\"$0\" logits -m \"$1\" --quantize q4_k --prompt-ids 1 2>&1); rc=$?; echo \"$out\"; \
[ $rc -eq 2 ] && echo \"$out\" | grep -q \"model.safetensors: tensor 'model.embed_tokens.weight' (BF16, 128 columns) cannot be quantized to Q4_K\""
          $<TARGET_FILE:encore> ${ENCORE_MODELS_DIR}/tiny-gqa4-hd128-bf16)
set_tests_properties(quantize_refusals PROPERTIES FIXTURES_REQUIRED tiny_models LABELS quant)

# Q4_K needs rows of whole 256-value blocks: tiny-gqa2-hd64-d256-bf16 has
# them. Bit-exact engine-vs-engine checks over its integer kernels (1 vs 2
# threads; captured decode vs eager); the K-type dots themselves are checked
# against the reference in test_quant_kernels.
add_test(NAME invariance_threads_q4_k
  COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_reference.py invariance-threads --quantize Q4_K
          --engine $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-d256-bf16)
set_tests_properties(invariance_threads_q4_k PROPERTIES
  FIXTURES_REQUIRED tiny_models LABELS "quant;reference" TIMEOUT 300)
add_test(NAME capture_q4_k_grow_shrink
  COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/capture_matrix.py --quantize q4_k
          --model tiny-gqa2-hd64-d256-bf16
          --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} grow_shrink)
set_tests_properties(capture_q4_k_grow_shrink PROPERTIES
  FIXTURES_REQUIRED tiny_models LABELS "quant;capture" TIMEOUT 600)

# Mixture-of-experts checkpoints with quantized experts (the router stays
# float). --quantize at load: tiny-moe-e8k2-bf16 (rows of 32-value blocks)
# against the reference on the same weights, as above; tiny-moe-e4k2-d256-bf16
# (rows of whole 256-value blocks) for Q4_K. --gguf: a qwen3moe file whose
# tensors take their own types (Q4_K with Q6_K down experts, as llama.cpp's
# Q4_K_M files do; every type at once) against the reference on the file's
# weights dequantized by NumPy (tests/gguf_weights.py).
foreach(q q8_0 q4_0)
  string(TOUPPER ${q} Q)
  add_test(NAME ref_logits_${q}_tiny-moe-e8k2-bf16
    COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_reference.py logits --quantize ${Q} --tol-rel 8e-2
            --engine $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/tiny-moe-e8k2-bf16)
  set_tests_properties(ref_logits_${q}_tiny-moe-e8k2-bf16 PROPERTIES
    FIXTURES_REQUIRED tiny_models LABELS "quant;reference;moe" TIMEOUT 300)
endforeach()
foreach(spec "Q4_K,ffn_down_exps=Q6_K" "Q5_K,ffn_gate_exps=Q8_0,ffn_up_exps=Q4_0" "Q6_K")
  string(REGEX REPLACE "[,=]" "_" name "${spec}")
  string(TOLOWER "${name}" name)
  add_test(NAME ref_logits_moe_gguf_${name}
    COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_reference.py logits --gguf ${spec} --tol-rel 8e-2
            --engine $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/tiny-moe-e4k2-d256-bf16)
  set_tests_properties(ref_logits_moe_gguf_${name} PROPERTIES
    FIXTURES_REQUIRED tiny_models LABELS "quant;reference;moe;gguf" TIMEOUT 300)
endforeach()
# Bit-exact engine-vs-engine over quantized experts: 1 vs 2 threads; each
# request alone vs all joining at different steps (other tokens sharing its
# experts), prefill vs decode; captured decode vs eager.
foreach(c "q8_0;tiny-moe-e8k2-bf16" "q4_k;tiny-moe-e4k2-d256-bf16")
  list(GET c 0 q)
  list(GET c 1 preset)
  string(TOUPPER ${q} Q)
  foreach(check invariance-threads invariance-batch)
    string(REPLACE "-" "_" chk ${check})
    add_test(NAME ${chk}_moe_${q}
      COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_reference.py ${check} --quantize ${Q}
              --engine $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/${preset})
    set_tests_properties(${chk}_moe_${q} PROPERTIES
      FIXTURES_REQUIRED tiny_models LABELS "quant;reference;moe" TIMEOUT 300)
  endforeach()
  add_test(NAME capture_moe_${q}_grow_shrink
    COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/capture_matrix.py --quantize ${q} --model ${preset}
            --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} grow_shrink)
  set_tests_properties(capture_moe_${q}_grow_shrink PROPERTIES
    FIXTURES_REQUIRED tiny_models LABELS "quant;capture;moe" TIMEOUT 600)
endforeach()

# Bad expert types: experts whose rows are no whole blocks of the --quantize
# type (tiny-moe-e4k1-f32's down experts have 48 columns) fail the load naming
# the tensor (exit 2: the type does not fit the model).
add_test(NAME quantize_refusals_moe
  COMMAND sh -c "set -u; out=$(\"$0\" logits -m \"$1\" --quantize q8_0 --prompt-ids 1 2>&1); rc=$?; echo \"$out\"; \
[ $rc -eq 2 ] && echo \"$out\" | grep -q \"tensor 'model.layers.0.mlp.experts.0.down_proj.weight' (F32, 48 columns) cannot be quantized to Q8_0\""
          $<TARGET_FILE:encore> ${ENCORE_MODELS_DIR}/tiny-moe-e4k1-f32)
set_tests_properties(quantize_refusals_moe PROPERTIES FIXTURES_REQUIRED tiny_models LABELS "quant;moe")

# The CPU backend's interleaved layout of Q4_0 / Q8_0 matrices (repack.h) and
# its kernels: the layout as drawn, the round trip, every ISA's interleaved
# matmul bit for bit against the portable dot, the buffer's read and write
# (tests/test_repack.c).
encore_add_c_test(test_repack ${ENCORE_TESTS_DIR}/test_repack.c)
set_tests_properties(test_repack PROPERTIES LABELS "quant;kernels")
