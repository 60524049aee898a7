/* random_seed.c - seeds drawn from the kernel's random source (random_seed.h). */
#define _GNU_SOURCE
#include "base/random_seed.h"

#include <stdatomic.h>
#include <sys/random.h>
#include <time.h>

uint64_t enc_random_seed(void)
{
    static atomic_uint_fast64_t counter;
    uint64_t z = 0;
    if (getrandom(&z, sizeof z, 0) == (ssize_t)sizeof z) return z;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    z = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec +
        atomic_fetch_add(&counter, 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
