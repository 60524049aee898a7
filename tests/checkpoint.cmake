# Checkpoint loading: safetensors, config.json and the Qwen3 tensor set.
encore_add_c_test(test_checkpoint ${ENCORE_TESTS_DIR}/test_checkpoint.c)

# libFuzzer targets for the checkpoint parsers (ENCORE_FUZZ=ON, clang only). They
# compile the reader's sources themselves, so that the code under test carries
# the fuzzer's coverage instrumentation, and each runs as a bounded ctest on
# the committed seed corpus. New inputs go to the build tree (the first corpus
# directory), never to the source tree; crashes to ${ENCORE_FUZZ_OUT}.
if(ENCORE_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(WARNING "ENCORE_FUZZ needs clang (have ${CMAKE_C_COMPILER_ID}); fuzz targets skipped")
  else()
    set(ENCORE_FUZZ_OUT ${PROJECT_BINARY_DIR}/fuzz)
    set(ENCORE_FUZZ_FLAGS -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
                          -fno-omit-frame-pointer -g -O1)
    set(ENCORE_FUZZ_BASE ${PROJECT_SOURCE_DIR}/src/base/status.c
                         ${PROJECT_SOURCE_DIR}/src/base/log.c
                         ${PROJECT_SOURCE_DIR}/src/base/dtype.c
                         ${PROJECT_SOURCE_DIR}/src/base/mapfile.c
                         ${PROJECT_SOURCE_DIR}/src/base/rope.c)
    foreach(target safetensors config gguf)
      if(target STREQUAL "safetensors")
        set(srcs ${PROJECT_SOURCE_DIR}/src/model/safetensors.c)
      elseif(target STREQUAL "gguf")
        set(srcs ${PROJECT_SOURCE_DIR}/src/model/gguf.c)
      else()
        set(srcs ${PROJECT_SOURCE_DIR}/src/model/config.c)
      endif()
      add_executable(fuzz_${target} ${ENCORE_TESTS_DIR}/fuzz_${target}.c ${srcs} ${ENCORE_FUZZ_BASE})
      target_include_directories(fuzz_${target} PRIVATE ${PROJECT_SOURCE_DIR}/src)
      target_compile_options(fuzz_${target} PRIVATE ${ENCORE_FUZZ_FLAGS})
      target_link_options(fuzz_${target} PRIVATE -fsanitize=fuzzer,address,undefined)
      target_link_libraries(fuzz_${target} PRIVATE PkgConfig::CJSON m)
      file(MAKE_DIRECTORY ${ENCORE_FUZZ_OUT}/corpus-${target})
      add_test(NAME fuzz_${target}
        COMMAND fuzz_${target} -max_total_time=20 -runs=2000000 -max_len=4096
                -dict=${ENCORE_TESTS_DIR}/fuzz/${target}.dict
                -artifact_prefix=${ENCORE_FUZZ_OUT}/crash-${target}-
                ${ENCORE_FUZZ_OUT}/corpus-${target}
                ${ENCORE_TESTS_DIR}/fuzz/corpus/${target}
        WORKING_DIRECTORY ${ENCORE_FUZZ_OUT})
      set_tests_properties(fuzz_${target} PROPERTIES TIMEOUT 120 LABELS fuzz)
    endforeach()
  endif()
endif()
