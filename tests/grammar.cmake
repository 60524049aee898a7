# The grammar layer (src/grammar): structured outputs. Label "grammar".
#   grammar_unit     the EBNF compiler's errors (line:col), whole-string
#                    matching, UTF-8 classes, masks against brute force
#   grammar_regex    regex -> EBNF against PCRE2: generated strings match,
#                    random and mutated strings agree both ways
#   grammar_schema   JSON Schema -> EBNF: unsupported keywords refused by name
#   grammar_schema_property  ~50 schemas, 20 seeded samples each drawn from
#                    the masks over the real Qwen3 vocabulary, every finished
#                    one validated by Python's jsonschema (python3-jsonschema)
#   grammar_schema_mutation  the same with one grammar rule broken on
#                    purpose: the validator must catch it
#   grammar_structured_api  constrained requests through the C API on the tiny
#                    real-vocabulary model (validated by jsonschema), refusals
#                    by field, an unconstrained request unchanged beside them
#   grammar_server   the same through encore serve: response_format,
#                    structured_outputs, guided_*, 400s naming the keyword
#   grammar_tool_choice  the tool-call grammar of "required" and a named
#                    function on hand-written replies, hermes JSON and
#                    Qwen3-Coder's XML (string values against a reference on
#                    seeded random texts); bad tools and parameters by name
#   grammar_server_tool_choice  tool_choice "required" and a named function
#                    enforced: calls allowed, arguments valid (jsonschema)
# With ENCORE_FUZZ (clang): fuzz_json_schema, 20 s, labelled "fuzz".
# grammar_bench (bench/bench_grammar.c) is a benchmark program, not a test.
set(ENCORE_GRAMMAR_TESTS ${ENCORE_TESTS_DIR}/grammar)

function(encore_grammar_test name source)
  add_executable(${name} ${source})
  target_link_libraries(${name} PRIVATE encore_internals)
  target_include_directories(${name} PRIVATE ${ENCORE_TESTS_DIR} ${ENCORE_GRAMMAR_TESTS})
  add_test(NAME ${name} COMMAND ${name} ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS grammar TIMEOUT 120)
endfunction()

encore_grammar_test(grammar_unit ${ENCORE_GRAMMAR_TESTS}/test_grammar.c)
encore_grammar_test(grammar_regex ${ENCORE_GRAMMAR_TESTS}/test_regex.c)

# The property test: sample, then validate with Python's jsonschema.
set(ENCORE_GRAMMAR_WORK ${PROJECT_BINARY_DIR}/grammar_tests)
file(MAKE_DIRECTORY ${ENCORE_GRAMMAR_WORK})
add_executable(grammar_sample_schemas ${ENCORE_GRAMMAR_TESTS}/sample_schemas.c)
target_link_libraries(grammar_sample_schemas PRIVATE encore_internals)
add_test(NAME grammar_schema_property
  COMMAND sh -c "\"$0\" \"$1\" \"$2\" 20 7 \"$3\" && ${ENCORE_PYTHON} \"$4\" \"$2\" \"$3\" 20"
          $<TARGET_FILE:grammar_sample_schemas> ${ENCORE_TOKENIZER_DIR}
          ${ENCORE_GRAMMAR_TESTS}/schemas.json ${ENCORE_GRAMMAR_WORK}/samples.jsonl
          ${ENCORE_GRAMMAR_TESTS}/validate_samples.py)
# The mutation: "false" misspelt in every rule that writes it.
add_test(NAME grammar_schema_mutation
  COMMAND sh -c "\"$0\" \"$1\" \"$2\" 20 7 \"$3\" '\"false\"' '\"flase\"' && ${ENCORE_PYTHON} \"$4\" \"$2\" \"$3\" 20 --expect-invalid"
          $<TARGET_FILE:grammar_sample_schemas> ${ENCORE_TOKENIZER_DIR}
          ${ENCORE_GRAMMAR_TESTS}/schemas.json ${ENCORE_GRAMMAR_WORK}/samples_mutated.jsonl
          ${ENCORE_GRAMMAR_TESTS}/validate_samples.py)
set_tests_properties(grammar_schema_property grammar_schema_mutation PROPERTIES LABELS grammar TIMEOUT 300)
encore_grammar_test(grammar_schema ${ENCORE_GRAMMAR_TESTS}/test_schema.c)
encore_grammar_test(grammar_tool_choice ${ENCORE_GRAMMAR_TESTS}/test_tool_grammar.c)

# --- fuzzing (ENCORE_FUZZ, clang): the schema compiler, then the grammar
# compiler and a matcher on whatever it accepted. Like the checkpoint parsers'
# targets (tests/checkpoint.cmake), the sources are compiled in with the
# fuzzer's instrumentation.
if(ENCORE_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  file(GLOB ENCORE_GRAMMAR_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/grammar/*.c)
  set(ENCORE_GRAMMAR_FUZZ_OUT ${PROJECT_BINARY_DIR}/fuzz)
  add_executable(fuzz_json_schema ${ENCORE_TESTS_DIR}/fuzz_json_schema.c ${ENCORE_GRAMMAR_SOURCES}
                 ${PROJECT_SOURCE_DIR}/src/base/status.c ${PROJECT_SOURCE_DIR}/src/base/json_whole.c
                 ${PROJECT_SOURCE_DIR}/src/base/json_exact.c)
  target_include_directories(fuzz_json_schema PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(fuzz_json_schema PRIVATE -fsanitize=fuzzer,address,undefined
    -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1)
  target_link_options(fuzz_json_schema PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_json_schema PRIVATE PkgConfig::CJSON Threads::Threads m)
  file(MAKE_DIRECTORY ${ENCORE_GRAMMAR_FUZZ_OUT}/corpus-json_schema)
  add_test(NAME fuzz_json_schema
    COMMAND fuzz_json_schema -max_total_time=20 -runs=2000000 -max_len=4096
            -dict=${ENCORE_TESTS_DIR}/fuzz/json_schema.dict
            -artifact_prefix=${ENCORE_GRAMMAR_FUZZ_OUT}/crash-json_schema-
            ${ENCORE_GRAMMAR_FUZZ_OUT}/corpus-json_schema
            ${ENCORE_TESTS_DIR}/fuzz/corpus/json_schema
    WORKING_DIRECTORY ${ENCORE_GRAMMAR_FUZZ_OUT})
  set_tests_properties(fuzz_json_schema PROPERTIES TIMEOUT 120 LABELS "fuzz;grammar")
endif()

# The mask benchmark (a program run by hand, not a test):
#   grammar_bench TOKENIZER_DIR SCHEMA.json [REQUESTS] [SEED]
add_executable(grammar_bench ${PROJECT_SOURCE_DIR}/bench/bench_grammar.c)
target_link_libraries(grammar_bench PRIVATE encore_internals)
target_include_directories(grammar_bench PRIVATE ${ENCORE_GRAMMAR_TESTS})

# Structured outputs through the C API on the tiny real-vocabulary model.
add_executable(test_structured_api ${ENCORE_GRAMMAR_TESTS}/test_structured_api.c)
target_link_libraries(test_structured_api PRIVATE encore_core PkgConfig::PCRE2 Threads::Threads)
target_include_directories(test_structured_api PRIVATE ${ENCORE_TESTS_DIR})
add_test(NAME grammar_structured_api
  COMMAND sh -c "\"$0\" \"$1\" \"$2\" 6 \"$3\" && ${ENCORE_PYTHON} \"$4\" \"$2\" \"$3\" 6 --min-finished 0.5"
          $<TARGET_FILE:test_structured_api> ${ENCORE_MODELS_DIR}/tiny-qwen3vocab
          ${ENCORE_GRAMMAR_TESTS}/schemas_api.json ${ENCORE_GRAMMAR_WORK}/samples_api.jsonl
          ${ENCORE_GRAMMAR_TESTS}/validate_samples.py)
set_tests_properties(grammar_structured_api PROPERTIES LABELS grammar TIMEOUT 300 FIXTURES_REQUIRED tiny_models)

# Structured outputs through `encore serve` (OpenAI's response_format, vLLM's
# structured_outputs and guided_*), validated by Python's jsonschema.
add_test(NAME grammar_server
  COMMAND ${ENCORE_PYTHON} ${ENCORE_GRAMMAR_TESTS}/server_structured.py --encore $<TARGET_FILE:encore>
          --models ${ENCORE_MODELS_DIR} --schemas ${ENCORE_GRAMMAR_TESTS}/schemas_api.json)
set_tests_properties(grammar_server PROPERTIES LABELS "grammar;server" TIMEOUT 300 FIXTURES_REQUIRED tiny_models)

# tool_choice "required" and a named function enforced through `encore
# serve`: every call's name allowed and its arguments valid (jsonschema).
add_test(NAME grammar_server_tool_choice
  COMMAND ${ENCORE_PYTHON} ${ENCORE_GRAMMAR_TESTS}/server_tool_choice.py --encore $<TARGET_FILE:encore>
          --models ${ENCORE_MODELS_DIR})
set_tests_properties(grammar_server_tool_choice PROPERTIES LABELS "grammar;server" TIMEOUT 300 FIXTURES_REQUIRED tiny_models)
