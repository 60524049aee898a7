# The engine: KV cache and graph-plan unit tests, and end-to-end checks
# through the CLI (tests/engine_cli.py).

encore_add_c_test(test_kv ${ENCORE_TESTS_DIR}/test_kv.c)
encore_add_c_test(test_graph_plan ${ENCORE_TESTS_DIR}/test_graph_plan.c)

foreach(check prefill_vs_decode threads preemption prefix_caching bad_args bad_checkpoints bad_requests chat bench_steps
              rope_context logits_full_context batch_text chat_interrupt)
  add_test(NAME engine_${check}
    COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/engine_cli.py
            --encore $<TARGET_FILE:encore> --models ${ENCORE_MODELS_DIR} ${check})
  set_tests_properties(engine_${check} PROPERTIES FIXTURES_REQUIRED tiny_models TIMEOUT 600)
endforeach()
