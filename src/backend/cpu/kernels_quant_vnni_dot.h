/* kernels_quant_vnni_dot.h - the dot vocabulary of kernels_quant_impl.h
 * from one vpdpbusd, shared by the two VNNI builds: the including file
 * defines CPU__Q_DOT4_ACC(acc, u, s) (AVX-512 VNNI's or AVX-VNNI's form of
 * the instruction) before it. vpdpbusd sums each 4-byte group of u8 x s8
 * products straight into an int32 lane, with no int16 step to saturate: the
 * very lanes the AVX2 build computes in two instructions. */
#ifndef ENC_CPU_KERNELS_QUANT_VNNI_DOT_H
#define ENC_CPU_KERNELS_QUANT_VNNI_DOT_H

#define CPU__Q_DOT4(u, s) CPU__Q_DOT4_ACC(_mm256_setzero_si256(), u, s)
/* sc16 holds one int16 twice in each int32 lane: the arithmetic shift gives it as int32 */
#define CPU__Q_DOT4_SCALED(u, s, sc16)                                                             \
    _mm256_mullo_epi32(CPU__Q_DOT4(u, s), _mm256_srai_epi32(sc16, 16))

#endif /* ENC_CPU_KERNELS_QUANT_VNNI_DOT_H */
