/* random_seed.h - a seed for a request that gave none: 64 bits from the
 * kernel's random source, drawn independently by every call. */
#ifndef ENC_BASE_RANDOM_SEED_H
#define ENC_BASE_RANDOM_SEED_H

#include <stdint.h>

/* getrandom's 64 bits; should that fail, splitmix64 over the clock (ns) and
 * a process-wide counter, so two calls never repeat within a process.
 * Thread-safe. */
uint64_t enc_random_seed(void);

#endif
