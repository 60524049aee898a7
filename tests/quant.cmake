# quant.cmake - the GGUF block formats (src/base/quant.c): quantize ->
# dequantize error bounds (test_quant), and dequantization bit for bit against
# the independent NumPy dequantizers of tests/reference/gguf_quants.py
# (test_quant_numpy).
encore_add_c_test(test_quant ${ENCORE_TESTS_DIR}/test_quant.c)
set_tests_properties(test_quant PROPERTIES LABELS quant)

add_test(NAME test_quant_numpy
  COMMAND ${ENCORE_PYTHON} ${ENCORE_TESTS_DIR}/test_quant_numpy.py $<TARGET_FILE:test_quant>)
set_tests_properties(test_quant_numpy PROPERTIES LABELS quant TIMEOUT 60)

# The CPU matmul over block-quantized weights, per type and ISA: against a
# double-precision reference on the dequantized operands, batch invariance bit
# for bit, get_rows of quantized tables (tests/test_quant_kernels.c).
encore_add_c_test(test_quant_kernels ${ENCORE_TESTS_DIR}/test_quant_kernels.c)
set_tests_properties(test_quant_kernels PROPERTIES LABELS "quant;kernels")
