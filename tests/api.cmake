# The public C API against the independent reference's greedy ids.

set(ENCORE_API_EXPECTED ${PROJECT_BINARY_DIR}/test_api_expected.txt)
set(ENCORE_API_MODEL ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16)
add_test(NAME test_api_reference_ids
  COMMAND sh -c "${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/reference/qwen3_ref.py greedy -m ${ENCORE_API_MODEL} --prompt-ids '7 100 13 42 5 77 300 12 9 488 64 3' -n 24 > ${ENCORE_API_EXPECTED}")
set_tests_properties(test_api_reference_ids PROPERTIES FIXTURES_REQUIRED tiny_models FIXTURES_SETUP api_expected)

add_executable(test_api ${ENCORE_TESTS_DIR}/test_api.c)
target_link_libraries(test_api PRIVATE encore_core)
add_test(NAME test_api COMMAND test_api ${ENCORE_API_MODEL} ${ENCORE_API_EXPECTED})
set_tests_properties(test_api PROPERTIES FIXTURES_REQUIRED "tiny_models;api_expected")
