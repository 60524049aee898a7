# The public C API: greedy ids against the independent reference (test_api,
# built with include/encore.h alone); serving through the engine thread
# (test_api_serving); encore_chat_tokenize against encore_chat_prompt and
# encore_tokenize (test_api_chat); examples/stream.c run once; the encore program's
# includes of src/ (test_tools_includes).

set(ENCORE_API_EXPECTED ${PROJECT_BINARY_DIR}/test_api_expected.txt)
set(ENCORE_API_MODEL ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16)
add_test(NAME test_api_reference_ids
  COMMAND sh -c "${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/reference/qwen3_ref.py greedy -m ${ENCORE_API_MODEL} --prompt-ids '7 100 13 42 5 77 300 12 9 488 64 3' -n 24 > ${ENCORE_API_EXPECTED}")
set_tests_properties(test_api_reference_ids PROPERTIES FIXTURES_REQUIRED tiny_models FIXTURES_SETUP api_expected)

add_executable(test_api ${ENCORE_TESTS_DIR}/test_api.c)
target_link_libraries(test_api PRIVATE encore_core)
add_test(NAME test_api COMMAND test_api ${ENCORE_API_MODEL} ${ENCORE_API_EXPECTED})
set_tests_properties(test_api PROPERTIES FIXTURES_REQUIRED "tiny_models;api_expected")

add_executable(test_api_serving ${ENCORE_TESTS_DIR}/test_api_serving.c)
target_link_libraries(test_api_serving PRIVATE encore_internals)
add_test(NAME test_api_serving COMMAND test_api_serving ${ENCORE_MODELS_DIR}/tiny-qwen3vocab ${ENCORE_API_MODEL})
set_tests_properties(test_api_serving PROPERTIES FIXTURES_REQUIRED tiny_models TIMEOUT 600)

add_executable(test_api_chat ${ENCORE_TESTS_DIR}/test_api_chat.c)
target_link_libraries(test_api_chat PRIVATE encore_core)
target_include_directories(test_api_chat PRIVATE ${ENCORE_TESTS_DIR})
add_test(NAME test_api_chat COMMAND test_api_chat ${ENCORE_MODELS_DIR}/tiny-qwen3vocab)
set_tests_properties(test_api_chat PROPERTIES FIXTURES_REQUIRED tiny_models)

add_test(NAME example_stream COMMAND example_stream ${ENCORE_MODELS_DIR}/tiny-qwen3vocab "Hello" 8)
set_tests_properties(example_stream PROPERTIES FIXTURES_REQUIRED tiny_models
  PASS_REGULAR_EXPRESSION "8 generated, finish_reason length")

# The encore program reaches the engine's internals only through
# src/api/encore_tools.h (and the server through src/server/server.h).
add_test(NAME test_tools_includes
  COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-tools-includes.sh ${PROJECT_SOURCE_DIR}/tools)
