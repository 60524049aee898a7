# sanitizers.cmake - what the sanitizer build (ENCORE_SANITIZE=ON) adds to
# every test: the LeakSanitizer suppressions of tests/lsan.supp (leaks inside
# the Vulkan loader and drivers, never encore's own), and a test that proves
# encore's own leaks are still caught in a process that opened Vulkan.
#
# This file sorts last among tests/*.cmake ("s" after the others but
# "tokenizer" and "vulkan"), so the environment is added in CMakeLists.txt
# once every test exists: encore_sanitize_all_tests() below.
if(NOT ENCORE_SANITIZE)
  function(encore_sanitize_all_tests)
  endfunction()
  return()
endif()

set(ENCORE_LSAN_OPTIONS "suppressions=${ENCORE_TESTS_DIR}/lsan.supp:print_suppressions=0")

if(ENCORE_VULKAN)
  # Leaks 4242 bytes on purpose after opening and closing the Vulkan device:
  # LeakSanitizer must report exactly those (Mesa's own leak suppressed).
  encore_add_c_test(test_lsan_catches_vulkan ${ENCORE_TESTS_DIR}/test_lsan_catches_vulkan.c)
  set_tests_properties(test_lsan_catches_vulkan PROPERTIES
    PASS_REGULAR_EXPRESSION "SUMMARY: AddressSanitizer: 4242 byte\\(s\\) leaked in 1 allocation\\(s\\)")
endif()

function(encore_sanitize_all_tests)
  get_property(tests DIRECTORY ${PROJECT_SOURCE_DIR} PROPERTY TESTS)
  if(tests)
    set_property(TEST ${tests} APPEND PROPERTY ENVIRONMENT "LSAN_OPTIONS=${ENCORE_LSAN_OPTIONS}")
  endif()
endfunction()
