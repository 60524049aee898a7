/* backend.h - the device interface: buffers, explicit host<->device copies,
 * and running a step graph.
 *
 * Tensors live in backend buffers that are opaque to the model and the
 * engine (DESIGN principle 4); the host reaches them only through
 * backend_buffer_write / backend_buffer_read. A backend is a vtable
 * (struct backend_i) filled by cpu/ and vulkan/; the model never sees
 * which one runs. */
#ifndef ENC_BACKEND_BACKEND_H
#define ENC_BACKEND_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"
#include "graph/graph.h"

typedef struct backend backend;
typedef struct backend_buffer backend_buffer;       /* defined by each backend (also in graph.h) */
typedef struct backend_recording backend_recording; /* defined by each backend */

struct backend_i {
    /* Short name for logs and errors ("cpu"). */
    const char *name;
    /* The KV cache dtypes its store_kv and attention run, as bits
     * 1u << enc_dtype; 0 means F32 only. */
    unsigned kv_cache_dtypes;
    /* Allocate size bytes of device memory, zeroed; `what` names it in errors. */
    enc_status (*buffer_alloc)(backend *be, size_t size, const char *what, backend_buffer **out);
    /* (optional) Use host memory that outlives the buffer (a mapped weight
     * file) without copying. NULL: the caller allocates and writes instead. */
    enc_status (*buffer_from_host)(backend *be, const void *data, size_t size, const char *what,
                                   backend_buffer **out);
    /* Release a buffer; NULL is a no-op. Refused (buffer kept) while capturing. */
    enc_status (*buffer_free)(backend *be, backend_buffer *buf);
    /* Copy size bytes from host memory into the buffer at offset. */
    enc_status (*buffer_write)(backend *be, backend_buffer *buf, size_t offset, const void *src,
                               size_t size);
    /* Copy size bytes from the buffer at offset into host memory. */
    enc_status (*buffer_read)(backend *be, backend_buffer *buf, size_t offset, void *dst,
                              size_t size);
    /* (optional) A promise: buf holds, from offset 0, n_mats weight
     * matrices [rows, k] of the block type dtype one after another in the
     * row layout, written in full, and only these ops will read it, the
     * whole buffer in that shape and type: n_mats 1, GRAPH_OP_MATMUL (as its
     * weight) and GRAPH_OP_GET_ROWS (as its table) over [rows, k]; n_mats
     * > 1 (a MoE layer's stacked experts), GRAPH_OP_MATMUL_ID (as its
     * weight) over [n_mats, rows, k]. The backend may re-lay the matrices
     * out for its kernels, each on its own; a later buffer_write may be
     * refused, buffer_read still gives the row layout's bytes. NULL: the
     * buffer stays as written. */
    enc_status (*buffer_repack_matrix)(backend *be, backend_buffer *buf, enc_dtype dtype,
                                       int64_t n_mats, int64_t rows, int64_t k);
    /* Run every node of a planned graph, in order, now (eager). */
    enc_status (*graph_compute)(backend *be, const graph *g);
    /* (optional) A promise: the host will read bytes [offset, offset +
     * size) of buf after the next graph_compute, or, while capturing, after
     * every replay of the recording. A backend may bring them back within
     * that work, so that the read costs no further round trip. Allowed
     * while capturing (it reads nothing). */
    enc_status (*expect_read)(backend *be, backend_buffer *buf, size_t offset, size_t size);
    /* (optional) Begin a capture: until capture_end, graph_compute records
     * its work instead of running it, with every tensor at the address it is
     * bound to now, and every buffer alloc, free, write and read on this
     * backend is refused with ENC_ERR_CAPTURE and a message naming the call
     * and the buffer (the capture contract). */
    enc_status (*capture_begin)(backend *be);
    /* (optional) End the capture; the recording is the caller's to free. */
    enc_status (*capture_end)(backend *be, backend_recording **out);
    /* (optional) Run a recording: all its work, in order, on the buffers it
     * was bound to; their contents (the inputs) are read as they are now. */
    enc_status (*replay)(backend *be, const backend_recording *rec);
    /* (optional) Free a recording; NULL is a no-op. */
    void (*recording_free)(backend *be, backend_recording *rec);
    /* (optional) Seconds of device time spent by all submissions so far
     * (from device timestamps). */
    double (*device_seconds)(const backend *be);
    /* (optional) Whether op (GRAPH_OP_MATMUL, GRAPH_OP_GET_ROWS) can read a
     * weight of the block type t (enc_dtype_is_quantized). NULL: no block
     * type at all (F32, BF16 and F16 weights only). */
    bool (*supports_weight_dtype)(const backend *be, graph_op op, enc_dtype t);
    /* (optional) Whether a matmul over BF16 weights may take a BF16
     * activation scratch (graph->bf16_activations): the activations rounded
     * to bf16 and bf16 products. NULL: no. */
    bool (*supports_bf16_activations)(const backend *be);
    /* (optional) Whether graph_compute runs nodes of this op. NULL: every
     * op of the graph. (The engine asks before it builds GRAPH_OP_SAMPLE.) */
    bool (*supports_op)(const backend *be, graph_op op);
    /* (optional) One line naming the device, for `encore serve`'s start:
     * "cpu (avx2 kernels, 2 threads)", "vulkan: NVIDIA H100 80GB HBM3".
     * NULL: the name alone. */
    void (*describe)(const backend *be, char *out, size_t size);
    /* Release the backend and everything it owns. */
    void (*destroy)(backend *be);
};

struct backend {
    const struct backend_i *iface;
    void *ctx; /* the implementation's state */
};

enc_status backend_buffer_alloc(backend *be, size_t size, const char *what, backend_buffer **out);
/* Zero-copy where the backend can, else allocate and copy. */
enc_status backend_buffer_from_host(backend *be, const void *data, size_t size, const char *what,
                                    backend_buffer **out);
/* Whether backend_buffer_from_host keeps using the host memory it is given
 * (zero copy). When false the caller may release that memory as soon as the
 * call returns. */
bool backend_buffer_keeps_host(const backend *be);
enc_status backend_buffer_free(backend *be, backend_buffer *buf); /* NULL is a no-op */
enc_status backend_buffer_write(backend *be, backend_buffer *buf, size_t offset, const void *src,
                                size_t size);
enc_status backend_buffer_read(backend *be, backend_buffer *buf, size_t offset, void *dst,
                               size_t size);
/* See backend_i.buffer_repack_matrix; ENC_OK where the backend has none. */
enc_status backend_buffer_repack_matrix(backend *be, backend_buffer *buf, enc_dtype dtype,
                                        int64_t n_mats, int64_t rows, int64_t k);
enc_status backend_graph_compute(backend *be, const graph *g);
/* See backend_i.expect_read; ENC_OK where the backend has no use for it. */
enc_status backend_expect_read(backend *be, backend_buffer *buf, size_t offset, size_t size);
void backend_destroy(backend *be); /* NULL is a no-op */
/* Device time so far in seconds; 0 where the backend does not measure it
 * (the CPU: there, all time is host time). */
double backend_device_seconds(const backend *be);
/* Whether op can read a weight of dtype t: F32, BF16 and F16 always, a
 * block type where the backend says so (backend_i.supports_weight_dtype). */
bool backend_supports_weight_dtype(const backend *be, graph_op op, enc_dtype t);

/* --- choosing a backend (backend_select.c) ------------------------------------ */
/* "cpu" (also NULL or ""), "vulkan" or "vulkan:N"; n_threads is the CPU
 * backend's (<= 0: one per CPU). An unknown name, or Vulkan in a build
 * without it, is an error naming the device. */
enc_status backend_create_named(const char *device, int n_threads, backend **out);
/* Whether backend_create_named would recognise the name (whatever this
 * build and machine have). */
bool backend_name_valid(const char *device);
/* The CPU backend's compute threads; for a device backend, the host's CPUs. */
int backend_host_threads(const backend *be);
/* backend_i.describe's line into out (the name where it has none). */
void backend_describe(const backend *be, char *out, size_t size);

/* --- capture and replay (DESIGN principles 1-3) ----------------------------- */
bool backend_supports_capture(const backend *be);
/* Whether store_kv and attention run over a KV cache of dtype. */
bool backend_supports_kv_cache_dtype(const backend *be, enc_dtype dtype);
/* See backend_i.supports_op. */
bool backend_supports_op(const backend *be, graph_op op);
/* Whether be runs matmuls over bf16 weights with bf16 activations. */
bool backend_supports_bf16_activations(const backend *be);
/* For implementations: ENC_OK when not capturing, else the capture
 * contract's refusal of `call` ("write", "read", ...) on buffer `what`. */
enc_status backend_refuse_in_capture(const backend *be, bool capturing, const char *call, const char *what);
enc_status backend_capture_begin(backend *be);
enc_status backend_capture_end(backend *be, backend_recording **out);
enc_status backend_replay(backend *be, const backend_recording *rec);
void backend_recording_free(backend *be, backend_recording *rec); /* NULL is a no-op */

#endif
