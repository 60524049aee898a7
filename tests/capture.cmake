# The captured decode step: the capture contract, and the replay-vs-eager matrix.

encore_add_c_test(test_capture ${ENCORE_TESTS_DIR}/test_capture.c)

foreach(scenario long join_after_capture grow_shrink block_crossing_32 same_and_different
                 pool_exhaustion eos_stops sampling)
  add_test(NAME capture_${scenario}
    COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/capture_matrix.py
            --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} ${scenario})
  set_tests_properties(capture_${scenario} PROPERTIES FIXTURES_REQUIRED tiny_models TIMEOUT 600)
endforeach()
