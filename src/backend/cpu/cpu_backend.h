/* cpu_backend.h - the CPU implementation of the backend interface: buffers
 * in host memory, a persistent thread pool, the SIMD kernels of kernels.h. */
#ifndef ENC_BACKEND_CPU_BACKEND_H
#define ENC_BACKEND_CPU_BACKEND_H

#include "backend/backend.h"

/* n_threads <= 0 means one per available CPU. */
enc_status cpu_backend_create(int n_threads, backend **out);
int cpu_backend_n_threads(const backend *be);

#endif
