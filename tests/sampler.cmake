# The sampler: unit tests through its API against reference computations
# (tests/test_sampler.c), and the engine's sampling end to end.
#   test_sampler            filters, penalties, min_tokens, greedy, logprobs, seeds
#   sampler_engine          sample_vocab through the engine (eager, single-step and
#                           multi-step decode agree; masked ids never come out),
#                           logprobs against the prompt logits of the same tokens,
#                           engine_request_logprobs, sample_vocab refused out of range
#   sampler_<check>         through `encore` (tests/sampler_cli.py): see its header

encore_add_c_test(test_sampler ${ENCORE_TESTS_DIR}/test_sampler.c)
set_tests_properties(test_sampler PROPERTIES TIMEOUT 300)
