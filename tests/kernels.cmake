# The CPU kernels: correctness against a double-precision reference and batch
# invariance, for every ISA the machine runs (tests/test_kernels.c); and the
# micro-benchmarks (bench/bench_kernels.c, bench/bench_moe_step.c), programs
# run by hand, not tests.

encore_add_c_test(test_kernels ${ENCORE_TESTS_DIR}/test_kernels.c)

add_executable(bench_kernels ${PROJECT_SOURCE_DIR}/bench/bench_kernels.c)
target_link_libraries(bench_kernels PRIVATE encore_internals)

# The MoE bench geometry's decode-step matmuls at T tokens (bench/bench_moe_step.c),
# also run by hand.
add_executable(bench_moe_step ${PROJECT_SOURCE_DIR}/bench/bench_moe_step.c)
target_link_libraries(bench_moe_step PRIVATE encore_internals)

# ENCORE_CPU_ISA forces the instruction set (scalar runs everywhere).
add_test(NAME test_kernels_isa_env COMMAND test_kernels --isa-env-only)
set_tests_properties(test_kernels_isa_env PROPERTIES ENVIRONMENT ENCORE_CPU_ISA=scalar)

# The yes/no words of environment variables, which the backends' switches
# (ENCORE_CPU_REPACK, ENCORE_VK_*) and the CLI's read alike (tests/test_env_flag.c).
encore_add_c_test(test_env_flag ${ENCORE_TESTS_DIR}/test_env_flag.c)

# The thread pool the kernels run on: every share once, dependent stages in
# order, more threads than cores (tests/test_threadpool.c).
encore_add_c_test(test_threadpool ${ENCORE_TESTS_DIR}/test_threadpool.c)

# The mixture-of-experts kernels: routing with ties, the expert-indexed
# matmul against cpu_matmul bit for bit, the weighted sum (tests/test_moe_ops.c).
encore_add_c_test(test_moe_ops ${ENCORE_TESTS_DIR}/test_moe_ops.c)

# The bf16 x bf16 matmul of --bf16-activations: the activations' rounding,
# each dot against a double-precision one, batch invariance, the expert
# matmul over it (tests/test_bf16_activations.c); skipped (77) on a CPU
# without AVX512-BF16 or with ENCORE_CPU_ISA narrower than avx512.
encore_add_c_test(test_bf16_activations ${ENCORE_TESTS_DIR}/test_bf16_activations.c)
set_tests_properties(test_bf16_activations PROPERTIES SKIP_RETURN_CODE 77)

# The quantized matmul's micro-benchmark (bench/bench_quant.c), run by hand.
add_executable(bench_quant ${PROJECT_SOURCE_DIR}/bench/bench_quant.c)
target_link_libraries(bench_quant PRIVATE encore_internals)

# The expert-indexed matmul over stacked block-quantized experts (Q8_0, Q4_0,
# Q4_K, Q5_K, Q6_K): against a double reference on the dequantized operands,
# and a token's row bit for bit that of the token alone, per ISA
# (tests/test_moe_quant_ops.c).
encore_add_c_test(test_moe_quant_ops ${ENCORE_TESTS_DIR}/test_moe_quant_ops.c)
set_tests_properties(test_moe_quant_ops PROPERTIES LABELS "quant;kernels")
