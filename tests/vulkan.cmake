# vulkan.cmake - the Vulkan backend's tests (label `vulkan`), run on
# whatever device the loader offers; on a machine without a GPU that is
# Mesa's lavapipe (mesa-vulkan-drivers).
#
#   vulkan_ops                 every op against the CPU backend, many shapes,
#                              and batch invariance (tests/test_vulkan_ops.c)
#   vulkan_ops_no_subgroup     the same with the shaders' fallback reductions
if(NOT ENCORE_VULKAN)
  return()
endif()

add_executable(test_vulkan_ops ${ENCORE_TESTS_DIR}/test_vulkan_ops.c)
target_link_libraries(test_vulkan_ops PRIVATE encore_core)
target_include_directories(test_vulkan_ops PRIVATE ${ENCORE_TESTS_DIR})
add_test(NAME vulkan_ops COMMAND test_vulkan_ops)
add_test(NAME vulkan_ops_no_subgroup COMMAND test_vulkan_ops)
set_tests_properties(vulkan_ops_no_subgroup PROPERTIES ENVIRONMENT ENCORE_VK_SUBGROUP=0)
set_tests_properties(vulkan_ops vulkan_ops_no_subgroup PROPERTIES LABELS vulkan TIMEOUT 300)

# The capture contract on Vulkan: one test per refused call, and replay vs
# eager bit for bit (tests/test_capture.c on ENCORE_DEVICE=vulkan).
foreach(case write read alloc free nested replay end replay_matches_eager)
  add_test(NAME vulkan_capture_contract_${case} COMMAND test_capture ${case})
  set_tests_properties(vulkan_capture_contract_${case} PROPERTIES ENVIRONMENT ENCORE_DEVICE=vulkan LABELS vulkan)
endforeach()
