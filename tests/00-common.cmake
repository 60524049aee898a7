# Shared helpers for the test suite. Every other tests/*.cmake file is
# included after this one (alphabetical order).

set(ENCORE_TESTS_DIR ${PROJECT_SOURCE_DIR}/tests)
set(ENCORE_MODELS_DIR ${PROJECT_BINARY_DIR}/models)

# encore_internals - the engine with its internal headers (src/) on the
# include path: the tests check internals, so they link this rather than
# encore_core, whose only interface is include/encore.h.
add_library(encore_internals INTERFACE)
target_include_directories(encore_internals INTERFACE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(encore_internals INTERFACE encore_core)

# encore_add_c_test(NAME SOURCES...) - a C test program linked with the engine.
function(encore_add_c_test name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE encore_internals)
  target_include_directories(${name} PRIVATE ${ENCORE_TESTS_DIR})
  add_test(NAME ${name} COMMAND ${name})
endfunction()

# The tiny checkpoints every model test uses, made once per test run by the
# generator with fixed seeds (scripts/gen_checkpoint.py --preset tiny-all).
add_test(NAME gen_tiny_models
  COMMAND ${ENCORE_PYTHON} ${PROJECT_SOURCE_DIR}/scripts/gen_checkpoint.py
          --preset tiny-all --out ${ENCORE_MODELS_DIR}
          --tokenizer-dir ${PROJECT_BINARY_DIR}/tokenizer/qwen3)
set_tests_properties(gen_tiny_models PROPERTIES FIXTURES_SETUP tiny_models)
