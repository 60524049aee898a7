# `encore bench serve` against a scripted OpenAI-style server (tests/bench_serve.py):
# the report's token counts, concurrency and latencies checked against what
# that server recorded and slept.
add_test(NAME bench_serve_scripted
  COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/bench_serve.py $<TARGET_FILE:encore>)
set_tests_properties(bench_serve_scripted PROPERTIES TIMEOUT 300)
