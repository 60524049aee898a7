# The benchmarks' reports. `encore bench serve` against a scripted OpenAI-style
# server (tests/bench_serve.py):
# the report's token counts, concurrency and latencies checked against what
# that server recorded and slept.
add_test(NAME bench_serve_scripted
  COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/bench_serve.py $<TARGET_FILE:encore>)
set_tests_properties(bench_serve_scripted PROPERTIES TIMEOUT 300)

# `encore bench` on a model: each batch size's decode figure comes from steps
# decoding that many tokens (tests/bench_decode_batch.py).
add_test(NAME bench_decode_batch
  COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/bench_decode_batch.py $<TARGET_FILE:encore>
          ${ENCORE_MODELS_DIR}/tiny-moe-e8k2-bf16)
set_tests_properties(bench_decode_batch PROPERTIES FIXTURES_REQUIRED tiny_models TIMEOUT 300
  LABELS "engine")
