/* membw.h - measured memory bandwidth: a STREAM triad (a = b + s*c) over
 * arrays far larger than the caches, split over the thread pool. */
#ifndef ENC_TOOLS_MEMBW_H
#define ENC_TOOLS_MEMBW_H

/* Median GB/s (1e9 bytes/s, counting 3 arrays of traffic per pass) of
 * `runs` passes with n_threads threads; <= 0 on failure. */
double membw_triad_gbps(int n_threads, int runs);

#endif
