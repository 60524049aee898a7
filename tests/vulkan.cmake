# vulkan.cmake - the Vulkan backend's tests (label `vulkan`), run on the
# device the loader offers (ENCORE_DEVICE=vulkan); on a machine without a
# GPU that is Mesa's lavapipe (mesa-vulkan-drivers).
#
#   vulkan_ops, vulkan_ops_no_subgroup, vulkan_ops_no_texels,
#   vulkan_ops_gpu_layout
#                       every op against the CPU backend over many shapes,
#                       and batch invariance (test_vulkan_ops.c); the second
#                       with the shaders' fallback reductions, the third with
#                       every tensor read through storage buffers (the paths
#                       of devices whose texel views are small), the fourth
#                       with the workgroup layouts of a GPU (attention's
#                       subgroups merged through shared memory)
#   vulkan_quant, vulkan_quant_no_subgroup, vulkan_quant_no_texels
#                       the shaders over block-quantized weights (Q8_0, Q4_0,
#                       Q4_K, Q5_K, Q6_K: matmul, matmul_id, get_rows) against
#                       a double reference on the dequantized weights, batch
#                       invariance bit for bit (test_vulkan_quant.c)
#   vulkan_ref_<check>_<q>_<preset>, vulkan_ref_<check>_gguf_<spec>_<preset>
#                       quantized weights against the reference with f32
#                       activations; vulkan_capture_[moe_]<q>_<scenario>,
#                       vulkan_vs_cpu_logits_q8_0, vulkan_quantized_experts
#   vulkan_capture_contract_<case>       the capture contract (test_capture.c)
#   vulkan_profile_replay                ENCORE_VK_PROFILE's replayed nodes: per
#                       replay K sample and K x layers attention nodes, their
#                       times adding up to the replays' (vk_profile_check.py)
#   vulkan_vs_cpu_<check>_<preset>       the model: logits within 1e-4 of the
#                       CPU's, greedy ids identical (vulkan_vs_cpu.py)
#   vulkan_chunks_tiny_moe_e8k2_bf16     the MoE model's logits bit-identical in
#                       one step, steps of 11 and of 1 (vulkan_vs_cpu.py);
#                       vulkan_chunks_gguf_<spec>_tiny_moe_e4k2_d256_bf16 the
#                       same over GGUF files of quantized experts
#   vulkan_bad_device                    bad device names and indices refused
#   vulkan_constraint_engine             per-request token masks through the host
#                       sampler (test_constraint_engine.c, one seed)
#   vulkan_ref_<check>_<preset>          the model against the NumPy reference
#                       (test_reference.py, same tolerance as on the CPU)
#   vulkan_capture_<scenario>            captured vs eager, bit-identical, over
#                       the scenarios of capture_matrix.py
#   vulkan_validation_<test>             every test above once more with
#                       ENCORE_VK_VALIDATION=1: the Khronos validation layer
#                       on, any message it reports fails the test
if(NOT ENCORE_VULKAN)
  return()
endif()

# vk_test(NAME COMMAND...) - a Vulkan test; its command is kept in
# VK_CMD_<NAME> for the validation run below.
macro(vk_test name)
  add_test(NAME ${name} COMMAND ${ARGN})
  set(VK_CMD_${name} ${ARGN})
  list(APPEND ENCORE_VK_TESTS ${name})
endmacro()

add_executable(test_vulkan_ops ${ENCORE_TESTS_DIR}/test_vulkan_ops.c)
target_link_libraries(test_vulkan_ops PRIVATE encore_internals)
target_include_directories(test_vulkan_ops PRIVATE ${ENCORE_TESTS_DIR})
vk_test(vulkan_ops test_vulkan_ops)
vk_test(vulkan_ops_no_subgroup test_vulkan_ops)
vk_test(vulkan_ops_no_texels test_vulkan_ops)
vk_test(vulkan_ops_gpu_layout test_vulkan_ops)

add_executable(test_vulkan_sample ${ENCORE_TESTS_DIR}/test_vulkan_sample.c)
target_link_libraries(test_vulkan_sample PRIVATE encore_internals m)
target_include_directories(test_vulkan_sample PRIVATE ${ENCORE_TESTS_DIR})
vk_test(vulkan_sample_op test_vulkan_sample)
vk_test(vulkan_sample_op_no_subgroup test_vulkan_sample)
vk_test(vulkan_sample_refused test_vulkan_sample refuse)
add_executable(test_vulkan_quant ${ENCORE_TESTS_DIR}/test_vulkan_quant.c)
target_link_libraries(test_vulkan_quant PRIVATE encore_internals)
target_include_directories(test_vulkan_quant PRIVATE ${ENCORE_TESTS_DIR})
vk_test(vulkan_quant test_vulkan_quant)
vk_test(vulkan_quant_no_subgroup test_vulkan_quant)
vk_test(vulkan_quant_no_texels test_vulkan_quant)

# ENCORE_VK_PROFILE's table of replayed nodes: K sample, decode_advance and
# K x layers attention nodes a replay, the ops' times adding up to the replays'.
vk_test(vulkan_profile_replay ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/vk_profile_check.py
        --encore $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16 --steps 4)

foreach(case write read alloc free nested replay end replay_matches_eager)
  vk_test(vulkan_capture_contract_${case} test_capture ${case})
endforeach()

foreach(preset tiny-gqa1-hd64-f32 tiny-gqa2-hd64-bf16 tiny-gqa4-hd128-bf16 tiny-gqa2-hd128-f16-sharded
               tiny-qwen3vocab tiny-moe-e8k2-bf16 tiny-moe-mixed-f32 tiny-yarn-bf16)
  string(REPLACE "-" "_" p "${preset}")
  set(checks logits greedy)
  if(preset STREQUAL "tiny-qwen3vocab")
    set(checks logits) # a 152k-row lm_head: greedy runs are slow on lavapipe
  endif()
  foreach(check ${checks})
    # Vulkan against the CPU kernel by kernel: f32 caches, so that no 16-bit
    # rounding of slightly different keys widens the tolerance
    vk_test(vulkan_vs_cpu_${check}_${p} ${CMAKE_COMMAND} -E env ENCORE_KV_CACHE_DTYPE=f32
            ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/vulkan_vs_cpu.py
            --encore $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/${preset} ${check})
    vk_test(vulkan_ref_${check}_${p} ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_reference.py ${check}
            --engine $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/${preset})
  endforeach()
endforeach()

# 16-bit KV caches on Vulkan against the reference rounding its cache alike
# (the tolerance of tests/reference.cmake's 16-bit KV tests).
foreach(kv bf16 f16)
  foreach(check logits greedy)
    vk_test(vulkan_ref_${check}_tiny_gqa4_hd128_bf16_kv${kv} ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_reference.py
            ${check} --kv-cache-dtype ${kv} --tol-rel ${ENCORE_REF_TOL_KV16} --engine $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/tiny-gqa4-hd128-bf16)
  endforeach()
endforeach()

# A Q8_0 KV cache on Vulkan (store_kv quantizes each block as the CPU does,
# attention dequantizes in the shader) against the reference rounding its
# cache through the same blocks, at the CPU's Q8_0 tolerance (reference.cmake);
# and the capture matrix on it, captured against eager.
foreach(check logits greedy)
  vk_test(vulkan_ref_${check}_tiny_gqa2_hd64_bf16_kvq8_0 ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_reference.py
          ${check} --kv-cache-dtype q8_0 --tol-rel ${ENCORE_REF_TOL_KVQ8} --engine $<TARGET_FILE:encore>
          -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16)
endforeach()
foreach(scenario long block_crossing_32)
  vk_test(vulkan_capture_${scenario}_kvq8_0 ${CMAKE_COMMAND} -E env ENCORE_KV_CACHE_DTYPE=q8_0
          ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/capture_matrix.py
          --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} ${scenario})
endforeach()

# A MoE model's logits the same bits whatever the step's size (grouped expert
# matmuls at prefill, one workgroup per pair below 8 tokens).
vk_test(vulkan_chunks_tiny_moe_e8k2_bf16 ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/vulkan_vs_cpu.py
        --encore $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/tiny-moe-e8k2-bf16 chunks)
# The same over quantized experts (matmul_id_q.comp grouped and per pair):
# GGUF files of every block type the shader reads, Q4_K with Q6_K down
# experts (llama.cpp's Q4_K_M) and Q5_K with Q8_0 gate and Q4_0 up experts.
foreach(spec "Q4_K,ffn_down_exps=Q6_K" "Q5_K,ffn_gate_exps=Q8_0,ffn_up_exps=Q4_0")
  string(REGEX REPLACE "[,=]" "_" name "${spec}")
  string(TOLOWER "${name}" name)
  vk_test(vulkan_chunks_gguf_${name}_tiny_moe_e4k2_d256_bf16 ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/vulkan_vs_cpu.py
          --gguf ${spec} --encore $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/tiny-moe-e4k2-d256-bf16 chunks)
endforeach()

vk_test(vulkan_bad_device ${CMAKE_COMMAND} -E env ENCORE_KV_CACHE_DTYPE=f32 ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/vulkan_vs_cpu.py
        --encore $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16 bad_device)

foreach(scenario long join_after_capture grow_shrink block_crossing_32 same_and_different
                 pool_exhaustion eos_stops sampling sampling_filters sampling_logprobs sampling_preemption)
  vk_test(vulkan_capture_${scenario} ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/capture_matrix.py
          --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} ${scenario})
endforeach()

# The capture matrix on a mixture-of-experts checkpoint: routing on the device.
foreach(scenario long grow_shrink)
  vk_test(vulkan_capture_moe_${scenario} ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/capture_matrix.py
          --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} --model tiny-moe-e8k2-bf16 ${scenario})
endforeach()

# Block-quantized weights (shaders/quant.glsl: matmul_q, matmul_id_q,
# get_rows_q multiply f32 activations by the dequantized weights). Against
# the NumPy reference on the same dequantized weights with f32 activations
# (test_reference.py --f32-activations) at the default tolerance: --quantize
# at load (dense tied and untied, MoE experts), and files of the K types
# from encore quantize (tests/gguf_weights.py; Q4_K with Q6_K down experts as
# llama.cpp's Q4_K_M, and every type at once).
foreach(c "logits;Q8_0;tiny-gqa2-hd64-bf16" "greedy;Q4_0;tiny-gqa4-hd128-bf16" "logits;Q4_0;tiny-moe-e8k2-bf16"
          "greedy;Q8_0;tiny-moe-e8k2-bf16")
  list(GET c 0 check)
  list(GET c 1 Q)
  list(GET c 2 preset)
  string(TOLOWER ${Q} q)
  string(REPLACE "-" "_" p "${preset}")
  vk_test(vulkan_ref_${check}_${q}_${p} ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_reference.py ${check}
          --quantize ${Q} --f32-activations --engine $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/${preset})
endforeach()
foreach(c "logits;Q4_K,ffn_down_exps=Q6_K;tiny-moe-e4k2-d256-bf16"
          "logits;Q5_K,ffn_gate_exps=Q8_0,ffn_up_exps=Q4_0;tiny-moe-e4k2-d256-bf16"
          "greedy;Q6_K;tiny-gqa2-hd64-d256-bf16" "greedy;Q4_K,attn_v=Q5_K;tiny-gqa2-hd64-d256-bf16")
  list(GET c 0 check)
  list(GET c 1 spec)
  list(GET c 2 preset)
  string(REGEX REPLACE "[,=]" "_" name "${spec}")
  string(TOLOWER "${name}" name)
  string(REPLACE "-" "_" p "${preset}")
  vk_test(vulkan_ref_${check}_gguf_${name}_${p} ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_reference.py ${check}
          --gguf ${spec} --f32-activations --engine $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/${preset})
endforeach()
# The capture matrix (captured vs eager, bit for bit) over quantized weights
# and experts. (Batch invariance of the shaders, tiles of 1, 2 and 4 tokens:
# test_vulkan_quant; the whole-model invariance-batch check takes minutes on
# lavapipe.)
foreach(c "q4_k;tiny-gqa2-hd64-d256-bf16;grow_shrink;" "q4_0;tiny-moe-e8k2-bf16;grow_shrink;moe_")
  list(GET c 0 q)
  list(GET c 1 preset)
  list(GET c 2 scenario)
  list(GET c 3 moe)
  vk_test(vulkan_capture_${moe}${q}_${scenario} ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/capture_matrix.py --quantize ${q}
          --model ${preset} --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} ${scenario})
endforeach()
# Vulkan against the CPU on a quantized checkpoint: the CPU rounds the
# activations to 8 bits, the shaders do not; each is within 8e-2 of its own
# reference (tests/quant.cmake) and Vulkan within 2e-4, so 8e-2 here too.
vk_test(vulkan_vs_cpu_logits_q8_0 ${CMAKE_COMMAND} -E env ENCORE_KV_CACHE_DTYPE=f32
        ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/vulkan_vs_cpu.py --quantize q8_0 --tol-rel 8e-2
        --encore $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16 logits)

# Token masks through the device sampler (shaders/sample.comp), and through
# the host sampler where the device lacks shaderFloat64 (ENCORE_VK_FLOAT64=0):
# constrained requests obey their rule and equal the reference's picks.
vk_test(vulkan_constraint_engine test_constraint_engine ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16 vulkan)
vk_test(vulkan_constraint_engine_host_sampler test_constraint_engine ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16 vulkan)

# Sampled requests with the device sampler in the multi-step replay
# (test_sample_engine.c): the reference's tokens; alone, staggered, eager,
# K = 1 / 4 / 16, preempted; a round trip reads back ids (and logprobs) only.
vk_test(vulkan_sample_engine test_sample_engine ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16 vulkan)

# The whole Vulkan suite once more with the validation layer.
foreach(t ${ENCORE_VK_TESTS})
  add_test(NAME vulkan_validation_${t} COMMAND ${VK_CMD_${t}})
  set_tests_properties(vulkan_validation_${t} PROPERTIES
    ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_VALIDATION=1"
    FAIL_REGULAR_EXPRESSION "vulkan validation"
    LABELS "vulkan;vulkan_validation" FIXTURES_REQUIRED tiny_models TIMEOUT 900)
endforeach()

set_tests_properties(${ENCORE_VK_TESTS} PROPERTIES
  ENVIRONMENT ENCORE_DEVICE=vulkan LABELS vulkan FIXTURES_REQUIRED tiny_models TIMEOUT 600)
set_tests_properties(vulkan_ops_no_subgroup PROPERTIES
  ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_SUBGROUP=0")
set_tests_properties(vulkan_validation_vulkan_ops_no_subgroup PROPERTIES
  ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_VALIDATION=1;ENCORE_VK_SUBGROUP=0")
set_tests_properties(vulkan_sample_op_no_subgroup PROPERTIES
  ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_SUBGROUP=0")
set_tests_properties(vulkan_validation_vulkan_sample_op_no_subgroup PROPERTIES
  ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_VALIDATION=1;ENCORE_VK_SUBGROUP=0")
set_tests_properties(vulkan_constraint_engine_host_sampler PROPERTIES
  ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_FLOAT64=0")
set_tests_properties(vulkan_validation_vulkan_constraint_engine_host_sampler PROPERTIES
  ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_VALIDATION=1;ENCORE_VK_FLOAT64=0")
set_tests_properties(vulkan_sample_refused PROPERTIES
  ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_FLOAT64=0")
set_tests_properties(vulkan_validation_vulkan_sample_refused PROPERTIES
  ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_VALIDATION=1;ENCORE_VK_FLOAT64=0")
set_tests_properties(vulkan_quant_no_subgroup PROPERTIES
  ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_SUBGROUP=0")
set_tests_properties(vulkan_validation_vulkan_quant_no_subgroup PROPERTIES
  ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_VALIDATION=1;ENCORE_VK_SUBGROUP=0")
set_tests_properties(vulkan_quant_no_texels PROPERTIES
  ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_TEXELS=0")
set_tests_properties(vulkan_validation_vulkan_quant_no_texels PROPERTIES
  ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_VALIDATION=1;ENCORE_VK_TEXELS=0")
set_tests_properties(vulkan_ops_no_texels PROPERTIES
  ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_TEXELS=0")
set_tests_properties(vulkan_validation_vulkan_ops_no_texels PROPERTIES
  ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_VALIDATION=1;ENCORE_VK_TEXELS=0")
set_tests_properties(vulkan_ops_gpu_layout PROPERTIES
  ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_CPU_LAYOUT=0")
set_tests_properties(vulkan_validation_vulkan_ops_gpu_layout PROPERTIES
  ENVIRONMENT "ENCORE_DEVICE=vulkan;ENCORE_VK_VALIDATION=1;ENCORE_VK_CPU_LAYOUT=0")

# A qwen3moe file with Q8_0 experts runs on Vulkan as on the CPU (their top
# logits within 5%: 8-bit against f32 activations; tests/test_gguf.py).
add_test(NAME vulkan_quantized_experts
  COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_gguf.py experts-vulkan --type bf16
          --engine $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/tiny-moe-e8k2-bf16)
set_tests_properties(vulkan_quantized_experts PROPERTIES
  FIXTURES_REQUIRED tiny_models LABELS "vulkan;quant;moe" TIMEOUT 120)

# Q5_0, IQ4_NL and Q3_K experts and matrices on Vulkan, read as they are:
# the ids and logits of the file of the widened Q8_0 / Q6_K blocks.
add_test(NAME vulkan_widened_types
  COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_gguf.py widened --device vulkan
          --engine $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/tiny-moe-e4k2-d256-bf16)
set_tests_properties(vulkan_widened_types PROPERTIES
  FIXTURES_REQUIRED tiny_models LABELS "vulkan;quant;moe" TIMEOUT 120)

# IQ4_XS and Q2_K experts and matrices on Vulkan, read by the _q shaders as they are.
foreach(type IQ4_XS Q2_K Q5_1)
  string(TOLOWER ${type} lower)
  add_test(NAME vulkan_${lower}
    COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_gguf.py read-as-is --type ${type} --device vulkan
            --engine $<TARGET_FILE:encore> -m ${ENCORE_MODELS_DIR}/tiny-moe-e4k2-d256-bf16)
  set_tests_properties(vulkan_${lower} PROPERTIES
    FIXTURES_REQUIRED tiny_models LABELS "vulkan;quant;moe" TIMEOUT 120)
endforeach()

