/* membw.h - measured memory bandwidth, the two ways `encore bench` reports
 * it, both over buffers far larger than the caches, on all threads, best of
 * several passes (as STREAM reports):
 *
 *   read   a read-only sum, eight independent lanes per thread, over one
 *          huge-page buffer: how decode reads its weights, so the decode
 *          roofline is computed from this figure
 *   triad  STREAM's a = b + s*c, counting four arrays of traffic per pass
 *          (b and c read, a written, and a read first for ownership: the
 *          write-allocate traffic STREAM itself leaves out) */
#ifndef ENC_TOOLS_MEMBW_H
#define ENC_TOOLS_MEMBW_H

typedef struct membw_result {
    double read_gbps;  /* 1e9 bytes/s; <= 0 when it could not be measured */
    double triad_gbps;
} membw_result;

/* `runs` passes of each (1..64) with n_threads threads. */
membw_result membw_measure(int n_threads, int runs);

#endif
