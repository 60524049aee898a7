/* quant_k.h - the K block types' quantizers (quant_k.c), behind
 * quant_quantize_row: each block's scales by least squares. */
#ifndef ENC_BASE_QUANT_K_H
#define ENC_BASE_QUANT_K_H

#include "base/quant.h"

void quant_k_q4_k(const float *x, block_q4_K *b); /* x: QUANT_K values */
void quant_k_q5_k(const float *x, block_q5_K *b);
void quant_k_q6_k(const float *x, block_q6_K *b);

#endif
