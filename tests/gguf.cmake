# GGUF: the reader and writer against each other and hand-laid bytes
# (test_gguf); bad files, lossless conversion and the tokenizer from GGUF
# metadata end to end through the encore program (test_gguf.py).
encore_add_c_test(test_gguf ${ENCORE_TESTS_DIR}/test_gguf.c)
set_tests_properties(test_gguf PROPERTIES LABELS gguf)
