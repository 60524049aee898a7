# The scheduler on a tiny checkpoint: prefix caching, chunked prefill,
# preemption, aborts, and a seeded random walk of requests checked for
# invariants after every event (tests/test_scheduler.c).

add_executable(test_scheduler ${ENCORE_TESTS_DIR}/test_scheduler.c)
target_link_libraries(test_scheduler PRIVATE encore_internals)
target_include_directories(test_scheduler PRIVATE ${ENCORE_TESTS_DIR})
foreach(case prefix_hit chunked preemption abort property accounting)
  add_test(NAME scheduler_${case}
    COMMAND test_scheduler ${ENCORE_MODELS_DIR}/tiny-gqa4-hd128-bf16 ${case})
  set_tests_properties(scheduler_${case} PROPERTIES FIXTURES_REQUIRED tiny_models TIMEOUT 600)
endforeach()
