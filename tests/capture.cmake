# The captured decode step: the capture contract, and the replay-vs-eager matrix.

# One ctest test per refusal of the capture contract, and replay vs eager.
add_executable(test_capture ${ENCORE_TESTS_DIR}/test_capture.c)
target_link_libraries(test_capture PRIVATE encore_internals)
foreach(case write read alloc free nested replay end replay_matches_eager)
  add_test(NAME capture_contract_${case} COMMAND test_capture ${case})
endforeach()

foreach(scenario long join_after_capture grow_shrink block_crossing_32 same_and_different
                 pool_exhaustion eos_stops sampling sampling_filters sampling_logprobs
                 sampling_preemption prefix_hits)
  add_test(NAME capture_${scenario}
    COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/capture_matrix.py
            --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} ${scenario})
  set_tests_properties(capture_${scenario} PROPERTIES FIXTURES_REQUIRED tiny_models TIMEOUT 600)
endforeach()

# The same on the KV cache dtypes other than the default (bf16 on the CPU),
# Q8_0 (per token and head blocks of 32) included; tests/vulkan.cmake has Vulkan's.
foreach(kv f32 f16 q8_0)
  foreach(scenario long block_crossing_32 prefix_hits)
    add_test(NAME capture_${scenario}_kv${kv}
      COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/capture_matrix.py
              --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} ${scenario})
    set_tests_properties(capture_${scenario}_kv${kv} PROPERTIES FIXTURES_REQUIRED tiny_models TIMEOUT 600
      ENVIRONMENT ENCORE_KV_CACHE_DTYPE=${kv})
  endforeach()
endforeach()

# The same matrix on mixture-of-experts checkpoints: routing on the device,
# replayed bit-identical to eager (K = 1, 4, 16 and --verify-capture).
foreach(scenario long join_after_capture grow_shrink same_and_different)
  foreach(preset tiny-moe-e8k2-bf16 tiny-moe-mixed-f32)
    string(REPLACE "-" "_" p "${preset}")
    add_test(NAME capture_moe_${scenario}_${p}
      COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/capture_matrix.py
              --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} --model ${preset} ${scenario})
    set_tests_properties(capture_moe_${scenario}_${p} PROPERTIES FIXTURES_REQUIRED tiny_models TIMEOUT 600)
  endforeach()
endforeach()

# --bf16-activations (bf16 x bf16 matmuls by vdpbf16ps): replayed
# bit-identical to eager on a dense and an MoE checkpoint; skipped (77) where
# the CPU has no AVX512-BF16.
foreach(scenario long join_after_capture)
  foreach(preset tiny-gqa2-hd64-bf16 tiny-moe-e8k2-bf16)
    string(REPLACE "-" "_" p "${preset}")
    add_test(NAME capture_bf16act_${scenario}_${p}
      COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/capture_matrix.py --bf16-activations
              --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} --model ${preset} ${scenario})
    set_tests_properties(capture_bf16act_${scenario}_${p} PROPERTIES FIXTURES_REQUIRED tiny_models
      TIMEOUT 600 SKIP_RETURN_CODE 77 ENVIRONMENT "ENCORE_BUILD_AVX512BF16=${ENCORE_CC_AVX512BF16}")
  endforeach()
endforeach()
add_test(NAME capture_bf16act_prefix_hits
  COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/capture_matrix.py --bf16-activations
          --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} prefix_hits)
set_tests_properties(capture_bf16act_prefix_hits PROPERTIES FIXTURES_REQUIRED tiny_models
  TIMEOUT 600 SKIP_RETURN_CODE 77 ENVIRONMENT "ENCORE_BUILD_AVX512BF16=${ENCORE_CC_AVX512BF16}")

# A growing step arena makes the decode slots record again (white-box).
add_executable(test_arena_growth ${ENCORE_TESTS_DIR}/test_arena_growth.c)
target_link_libraries(test_arena_growth PRIVATE encore_internals)
add_test(NAME capture_arena_growth COMMAND test_arena_growth ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16)
set_tests_properties(capture_arena_growth PROPERTIES FIXTURES_REQUIRED tiny_models)

# One engine switched between decode modes gives the eager engine's tokens
# and keeps a recording per step count (white-box, engine_set_decode_mode).
add_executable(test_decode_mode ${ENCORE_TESTS_DIR}/test_decode_mode.c)
target_link_libraries(test_decode_mode PRIVATE encore_internals)
target_include_directories(test_decode_mode PRIVATE ${ENCORE_TESTS_DIR})
add_test(NAME capture_decode_mode COMMAND test_decode_mode ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16)
set_tests_properties(capture_decode_mode PROPERTIES FIXTURES_REQUIRED tiny_models)
