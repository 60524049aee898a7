# The sampler: unit tests through its API against reference computations
# (tests/test_sampler.c), and the engine's sampling end to end.
#   test_philox             the generator: Random123's known answers, the uniform
#   test_sample_math        the sampler's arithmetic: exp / log against libm, AVX2
#                           weights against the portable loop, masses and draws
#                           against the plain definition, bit for bit
#   test_sample_op          the device sampler op against a plain reference picker,
#                           batch invariance, the whole vocabulary, chi-square
#   test_sampler            filters, penalties, min_tokens, greedy, logprobs, seeds
#   sampler_engine          sample_vocab through the engine (eager, single-step and
#                           multi-step decode agree; masked ids never come out),
#                           logprobs against the prompt logits of the same tokens,
#                           engine_request_logprobs, sample_vocab refused out of range
#   sample_engine           sampled requests with the device sampler in the multi-step
#                           replay: every token the reference picker's over the prompt
#                           logits of the same tokens; the same alone, staggered, eager,
#                           K = 1 / 4 / 16, preempted in a small KV pool
#   constraint_engine       per-request constraints (engine_constraint): tokens obey a
#                           test rule for many seeds, equal the reference picker's under
#                           its mask, leave unconstrained requests' tokens unchanged
#                           (alone vs mixed, eager, K = 1 / 4, preempted); errors and
#                           ownership (vulkan_constraint_engine: the same on Vulkan)
#   sampler_<check>         through `encore` (tests/sampler_cli.py): see its header

encore_add_c_test(test_philox ${ENCORE_TESTS_DIR}/test_philox.c)
encore_add_c_test(test_sample_math ${ENCORE_TESTS_DIR}/test_sample_math.c)
encore_add_c_test(test_sampler ${ENCORE_TESTS_DIR}/test_sampler.c)
encore_add_c_test(test_sample_op ${ENCORE_TESTS_DIR}/test_sample_op.c)
set_tests_properties(test_sampler PROPERTIES TIMEOUT 300)

add_executable(test_sampler_engine ${ENCORE_TESTS_DIR}/test_sampler_engine.c)
target_link_libraries(test_sampler_engine PRIVATE encore_internals)
target_include_directories(test_sampler_engine PRIVATE ${ENCORE_TESTS_DIR})
add_test(NAME sampler_engine COMMAND test_sampler_engine ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16)
set_tests_properties(sampler_engine PROPERTIES FIXTURES_REQUIRED tiny_models TIMEOUT 300)

add_executable(test_sample_engine ${ENCORE_TESTS_DIR}/test_sample_engine.c)
target_link_libraries(test_sample_engine PRIVATE encore_internals)
target_include_directories(test_sample_engine PRIVATE ${ENCORE_TESTS_DIR})
add_test(NAME sample_engine COMMAND test_sample_engine ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16)
set_tests_properties(sample_engine PROPERTIES FIXTURES_REQUIRED tiny_models TIMEOUT 300)

add_executable(test_constraint_engine ${ENCORE_TESTS_DIR}/test_constraint_engine.c)
target_link_libraries(test_constraint_engine PRIVATE encore_internals m)
target_include_directories(test_constraint_engine PRIVATE ${ENCORE_TESTS_DIR})
add_test(NAME constraint_engine COMMAND test_constraint_engine ${ENCORE_MODELS_DIR}/tiny-gqa2-hd64-bf16)
set_tests_properties(constraint_engine PROPERTIES FIXTURES_REQUIRED tiny_models TIMEOUT 300)

foreach(check modes seed logprobs logit_bias bad_args)
  add_test(NAME sampler_${check}
    COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/sampler_cli.py
            --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} ${check})
  set_tests_properties(sampler_${check} PROPERTIES FIXTURES_REQUIRED tiny_models TIMEOUT 600)
endforeach()

# CPU time of the sample kernel per row of a 151936-id vocabulary, sampled and
# greedy (bench/bench_sample.c): a program run by hand, not a test.
add_executable(bench_sample ${PROJECT_SOURCE_DIR}/bench/bench_sample.c)
target_link_libraries(bench_sample PRIVATE encore_internals)
