# The OpenAI-compatible HTTP server (src/server, `encore serve`).
#
#   test_server_unit   request parsing and validation, response and chunk JSON,
#                      the error object, the <think> splitter at every split
#                      point, UTF-8 checks, the Prometheus text, the header
#                      checks (Content-Type, Host, Bearer), the read deadline
#   test_server_json   the JSON writer against cJSON: every number and escape
#                      byte for byte, replies with 3000 x 20 log-probabilities
#   test_tool_calls    the <tool_call> parser on crafted replies (hermes JSON and
#                      Qwen3-Coder's XML), whole and split at every byte boundary
#                      (the same calls and content)
#   test_tool_request  tools, tool_choice, tool_calls and tool_call_id read and
#                      refused by field; tool_calls in replies and chunks
#   server_<check>     end to end over 127.0.0.1 (tests/server_e2e.py, one server
#                      per check on a port of its own): sse, batch, endpoints, errors,
#                      early, hosts, failures, oom, special, keepalive, limits,
#                      fairness, queue, disconnect, concurrency, args, bench, tools,
#                      fields, prompt_logprobs, bad_words (`encore bench serve` against
#                      it: its counts equal the server's counters; fields: the OpenAI
#                      and vLLM request fields that change a result, each done or
#                      refused by name; prompt_logprobs against `encore logits`' rows)
#   server_responses_<check>  POST /v1/responses (tests/server_responses.py): equal
#                      (each request answers as the chat request it stands for),
#                      stream (the events' framing and order, the final response
#                      the whole reply's), errors (the 4xx naming the field)
#   server_embeddings_<check>  POST /v1/embeddings on a Qwen3-Embedding-shaped model
#                      (tests/server_embeddings.py): values (against the NumPy
#                      reference's last hidden state), batch (each vector the same
#                      alone, in a batch, from the prefix cache, in base64, at
#                      once from 8 threads), errors (the 4xx naming the field)
#   run_batch_<check>  `encore run-batch` (tests/run_batch.py): answers (the results
#                      in input order, each body the server's reply to the same
#                      body, refusals with the server's status and error), input
#                      (malformed lines refused by line before the model loads)
#   server_<check>     connection slots (tests/server_connections.py): slowloris
#                      (600 trickling connections closed at --request-read-timeout,
#                      a normal client answered within 1 s meanwhile), per_ip
#                      (--max-connections-per-ip), fds (sockets numbered past 1024)
# Labelled "network" (npm installs the official `openai` package into the build
# tree; offline, server_npm_install fails and the two tests after it do not run,
# which ctest reports as failures):
#   server_npm_install, server_openai, server_openai_logprobs, server_openai_keepalive,
#   server_openai_tools, server_openai_responses (client.responses: create, a stream
#   through its strict ResponseStream, tools), server_openai_embeddings (client.embeddings.create on
#   an embedding model: base64 decoded as the float list), server_openai_tool_stream (crafted replies through the
#   tool-call parser and chunk objects, tests/tool_sse.c, read by the client)
# server_openai_logprobs needs an engine that reports log-probabilities in
# encore_output (include/encore.h); with one that does not, it fails, saying
# that the logprobs came back empty.
# With ENCORE_FUZZ (clang): fuzz_openai_request, 20 s, fuzz_tool_calls (the
# <tool_call> parser whole and in pieces, both formats), 20 s, and fuzz_http (raw bytes
# on a connection to a real server: request lines, header framing, bad chunk
# sizes, lines without colons, 1,000 headers), 20 s, labelled "fuzz".

foreach(name test_server_unit test_server_json test_tool_calls test_tool_request)
  add_executable(${name} ${ENCORE_TESTS_DIR}/${name}.c)
  target_link_libraries(${name} PRIVATE encore_server encore_internals)
  target_include_directories(${name} PRIVATE ${ENCORE_TESTS_DIR})
  # the tests make chosen reallocs fail (out-of-memory paths, tests/fail_realloc.h)
  target_link_options(${name} PRIVATE -Wl,--wrap=realloc)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS server)
endforeach()

set(ENCORE_SERVER_E2E ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/server_e2e.py --encore $<TARGET_FILE:encore>
                      --models ${ENCORE_MODELS_DIR})
foreach(check sse batch endpoints errors early hosts failures oom special templates_2507 templates_coder keepalive limits
              fairness queue disconnect concurrency args bench tools fields prompt_logprobs bad_words
              generation)
  add_test(NAME server_${check} COMMAND ${ENCORE_SERVER_E2E} ${check})
  set_tests_properties(server_${check} PROPERTIES FIXTURES_REQUIRED tiny_models TIMEOUT 300
                       LABELS server)
endforeach()

# POST /v1/responses against the chat request each stands for (tests/server_responses.py)
set(ENCORE_SERVER_RESPONSES ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/server_responses.py
    --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR})
foreach(check equal stream errors)
  add_test(NAME server_responses_${check} COMMAND ${ENCORE_SERVER_RESPONSES} ${check})
  set_tests_properties(server_responses_${check} PROPERTIES FIXTURES_REQUIRED tiny_models
                       TIMEOUT 300 LABELS server)
endforeach()

# POST /v1/embeddings on an embedding model against the reference (tests/server_embeddings.py)
foreach(check values batch errors special)
  add_test(NAME server_embeddings_${check} COMMAND ${ENCORE_PYTHON}
           ${ENCORE_TESTS_DIR}/server_embeddings.py --encore $<TARGET_FILE:encore>
           --models ${ENCORE_MODELS_DIR} ${check})
  set_tests_properties(server_embeddings_${check} PROPERTIES FIXTURES_REQUIRED tiny_models
                       TIMEOUT 300 LABELS server)
endforeach()

# `encore run-batch` against `encore serve` (tests/run_batch.py)
foreach(check answers input)
  add_test(NAME run_batch_${check} COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/run_batch.py
           --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} ${check})
  set_tests_properties(run_batch_${check} PROPERTIES FIXTURES_REQUIRED tiny_models TIMEOUT 300
                       LABELS server)
endforeach()

set(ENCORE_SERVER_CONNECTIONS ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/server_connections.py
    --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR})
foreach(check slowloris per_ip fds)
  add_test(NAME server_${check} COMMAND ${ENCORE_SERVER_CONNECTIONS} ${check})
  set_tests_properties(server_${check} PROPERTIES FIXTURES_REQUIRED tiny_models TIMEOUT 150
                       LABELS server)
endforeach()

# --- the official openai client (npm) -------------------------------------------
set(ENCORE_SERVER_NODE ${PROJECT_BINARY_DIR}/server_tests/node)
find_program(ENCORE_NODE node)
find_program(ENCORE_NPM npm)
if(ENCORE_NODE AND ENCORE_NPM)
  add_test(NAME server_npm_install
    COMMAND ${ENCORE_NPM} install --prefix ${ENCORE_SERVER_NODE} --no-audit --no-fund
            --save-exact openai@4.95.0)
else()
  # no node: fail, so that a machine without it does not pass by skipping
  add_test(NAME server_npm_install
    COMMAND sh -c "echo 'node and npm are needed (scripts/install-deps.sh)' >&2; exit 1")
endif()
set_tests_properties(server_npm_install PROPERTIES FIXTURES_SETUP server_node
                     LABELS "server;network" TIMEOUT 300)
foreach(check openai openai_logprobs openai_keepalive openai_tools openai_responses openai_embeddings)
  add_test(NAME server_${check}
    COMMAND ${ENCORE_SERVER_E2E} --node ${ENCORE_NODE} --node-dir ${ENCORE_SERVER_NODE} ${check})
  set_tests_properties(server_${check} PROPERTIES FIXTURES_REQUIRED "tiny_models;server_node"
                       TIMEOUT 300 LABELS "server;network")
endforeach()

# tool calls as the official client assembles them from the parser's chunks
add_executable(tool_sse ${ENCORE_TESTS_DIR}/tool_sse.c)
target_link_libraries(tool_sse PRIVATE encore_server encore_internals)
add_test(NAME server_openai_tool_stream
  COMMAND ${ENCORE_NODE} ${ENCORE_TESTS_DIR}/tool_stream_client.mjs ${ENCORE_SERVER_NODE}
          $<TARGET_FILE:tool_sse>)
set_tests_properties(server_openai_tool_stream PROPERTIES FIXTURES_REQUIRED server_node
                     TIMEOUT 120 LABELS "server;network")

# --- fuzzing the request parser (ENCORE_FUZZ, clang) ---------------------------------
if(ENCORE_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  set(ENCORE_SERVER_FUZZ_OUT ${PROJECT_BINARY_DIR}/fuzz)
  # encore_server_fuzz(NAME MAX_LEN SOURCES...): tests/NAME.c and the server
  # sources it parses with, run 20 s over tests/fuzz/corpus/<name> with
  # tests/fuzz/<name>.dict (NAME is fuzz_<name>).
  function(encore_server_fuzz name max_len)
    string(REGEX REPLACE "^fuzz_" "" short ${name})
    set(srcs)
    foreach(f ${ARGN})
      list(APPEND srcs ${PROJECT_SOURCE_DIR}/src/server/${f})
    endforeach()
    add_executable(${name} ${ENCORE_TESTS_DIR}/${name}.c ${srcs})
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src
                               ${PROJECT_SOURCE_DIR}/include)
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined
      -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(${name} PRIVATE PkgConfig::CJSON m)
    file(MAKE_DIRECTORY ${ENCORE_SERVER_FUZZ_OUT}/corpus-${short})
    add_test(NAME ${name}
      COMMAND ${name} -max_total_time=20 -max_len=${max_len}
              -dict=${ENCORE_TESTS_DIR}/fuzz/${short}.dict
              -artifact_prefix=${ENCORE_SERVER_FUZZ_OUT}/crash-${short}-
              ${ENCORE_SERVER_FUZZ_OUT}/corpus-${short}
              ${ENCORE_TESTS_DIR}/fuzz/corpus/${short}
      WORKING_DIRECTORY ${ENCORE_SERVER_FUZZ_OUT})
    set_tests_properties(${name} PROPERTIES TIMEOUT 120 LABELS "fuzz;server")
  endfunction()
  encore_server_fuzz(fuzz_openai_request 4096 openai_request.c openai_structured.c tool_request.c
                     responses_request.c json_span.c json_check.c json_out.c)
  # the <tool_call> parser: whole and in pieces, the same calls and content
  encore_server_fuzz(fuzz_tool_calls 2048 tool_calls.c tool_calls_xml.c json_span.c)

  # The HTTP layer: the server's sources carry the fuzzer's instrumentation,
  # the engine (encore_core) does not; inputs go over TCP to a real server.
  add_executable(fuzz_http ${ENCORE_TESTS_DIR}/fuzz_http.c ${ENCORE_SERVER_SOURCES})
  target_include_directories(fuzz_http PRIVATE ${PROJECT_SOURCE_DIR}/src
                             ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(fuzz_http PRIVATE -fsanitize=fuzzer,address,undefined
    -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1)
  target_link_options(fuzz_http PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_http PRIVATE encore_core PkgConfig::MHD PkgConfig::CJSON
                        Threads::Threads m)
  file(MAKE_DIRECTORY ${ENCORE_SERVER_FUZZ_OUT}/corpus-http)
  add_test(NAME fuzz_http
    COMMAND fuzz_http -max_total_time=20 -max_len=16384 -timeout=30
            -dict=${ENCORE_TESTS_DIR}/fuzz/http.dict
            -artifact_prefix=${ENCORE_SERVER_FUZZ_OUT}/crash-http-
            ${ENCORE_SERVER_FUZZ_OUT}/corpus-http
            ${ENCORE_TESTS_DIR}/fuzz/corpus/http
    WORKING_DIRECTORY ${ENCORE_SERVER_FUZZ_OUT})
  set_tests_properties(fuzz_http PROPERTIES TIMEOUT 120 LABELS "fuzz;server"
                       FIXTURES_REQUIRED tiny_models
                       ENVIRONMENT "ENCORE_FUZZ_MODEL=${ENCORE_MODELS_DIR}/tiny-qwen3vocab")
endif()
