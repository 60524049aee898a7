# The captured decode step: the capture contract, and the replay-vs-eager matrix.

# One ctest test per refusal of the capture contract, and replay vs eager.
add_executable(test_capture ${ENCORE_TESTS_DIR}/test_capture.c)
target_link_libraries(test_capture PRIVATE encore_core)
foreach(case write read alloc free nested replay end replay_matches_eager)
  add_test(NAME capture_contract_${case} COMMAND test_capture ${case})
endforeach()

foreach(scenario long join_after_capture grow_shrink block_crossing_32 same_and_different
                 pool_exhaustion eos_stops sampling)
  add_test(NAME capture_${scenario}
    COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/capture_matrix.py
            --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} ${scenario})
  set_tests_properties(capture_${scenario} PROPERTIES FIXTURES_REQUIRED tiny_models TIMEOUT 600)
endforeach()
