/* vk_impl.h - the Vulkan backend's internal state, shared by its files:
 *
 *   vk_device.c     instance, device choice, queue, validation messages
 *   vk_memory.c     buffers, their host mirrors and the staging buffer
 *   vk_pipelines.c  shader modules, the one pipeline layout, pipelines
 *   vk_ops.c        a graph node -> its dispatches (bindings, constants, grid)
 *   vk_backend.c    the vtable: eager submission, capture and replay
 *   vk_profile.c    ENCORE_VK_PROFILE: device time per op, eager and replayed
 *
 * Memory layout of a buffer:
 *
 *   device-local VkBuffer  [size bytes]  <- what shaders read and write
 *   host mirror (buffers <= VK_MIRROR_MAX): host-visible, mapped, same size;
 *     buffer_write copies into it and marks the range pending; the next
 *     submission copies pending ranges to the device first, and a recording
 *     copies every step input it reads from its mirror in full, at its first
 *     use (so a replay is: write the mirrors, submit, wait, read).
 *   larger buffers are written and read through one shared staging buffer.
 */
#ifndef ENC_BACKEND_VULKAN_VK_IMPL_H
#define ENC_BACKEND_VULKAN_VK_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "backend/backend.h"
#include "backend/vulkan/vk_backend.h"

enum {
    VK_N_BINDINGS = 8,                  /* tensor bindings per dispatch */
    VK_KV_WINDOWS = 8,                  /* bindings per KV cache (windows of it) */
    VK_N_DESCRIPTORS = VK_N_BINDINGS + 2 * VK_KV_WINDOWS, /* K windows at 8, V at 16 */
    VK_N_TEXELS = 2,                    /* texel-buffer views per dispatch, at binding VK_N_DESCRIPTORS */
    VK_TEXEL_BYTES = 16,                /* one texel of a view: four 32-bit words (R32G32B32A32_UINT) */
    VK_N_PARAMS = 16,                   /* integer parameters per dispatch */
    VK_MIRROR_MAX = 1 << 20,            /* buffers up to this size get a host mirror */
    VK_STAGING_SIZE = 16 << 20,         /* the shared staging buffer */
    VK_MAX_DISPATCHES = 64,             /* per graph node (windows of large weights) */
    VK_SPEC_KV_SHIFT = 3,               /* vk_dispatch.spec >> 3: the KV cache dtype */
    VK_N_SPECS = 32,                    /* pipelines per op: see vk_dispatch.spec */
    VK_N_QTYPES = 12,                   /* block types of the _q shaders (vk_qtype_slot) */
    VK_MAX_EXPECTED_READS = 4,          /* ranges the host promised to read after a step (expect_read) */
};

/* A texel-buffer view of part of a buffer (shaders/common.glsl: tex[]). */
typedef struct vk_view {
    VkDeviceSize start, range;
    VkBufferView view;
} vk_view;

struct backend_buffer {
    VkBuffer buf;
    VkDeviceMemory mem;
    size_t size;
    uint32_t heap;         /* the memory heap it came from */
    VkBuffer mirror;       /* VK_NULL_HANDLE for large buffers */
    VkDeviceMemory mirror_mem;
    uint32_t mirror_heap;
    unsigned char *mirror_map;
    bool pending;          /* mirror bytes [pend_lo, pend_hi) are newer than the device's */
    size_t pend_lo, pend_hi;
    char what[64];         /* what it holds, for error messages */
    vk_view *views;        /* texel views made of it so far, kept until it is freed */
    int n_views, cap_views;
    uint64_t fresh_submit; /* mirror bytes [fresh_lo, fresh_hi) equal the device's after submission */
    size_t fresh_lo, fresh_hi; /* number fresh_submit (vk_ctx.n_submits), if it is still the last */
};

/* Bytes [offset, offset + size) of a buffer. */
typedef struct vk_range {
    backend_buffer *buf;
    size_t offset, size;
} vk_range;

/* The push constants every shader declares (shaders/common.glsl). */
typedef struct vk_push {
    uint32_t off[VK_N_BINDINGS]; /* word offset of each binding's tensor in its range */
    uint32_t p[VK_N_PARAMS];
    uint32_t toff[VK_N_TEXELS];  /* texel offset of each texel view's tensor in the view */
} vk_push;

/* One dispatch, resolved: the pipeline (its graph op), buffer ranges,
 * constants and workgroup grid. */
typedef struct vk_dispatch {
    graph_op op;
    int spec;  /* its op's pipeline: specialization constant 0 = 1 << (spec & 3) (a loop's
                * trip count, unrolled); spec & 4: a workgroup of one subgroup (constant 1,
                * the workgroup size, = the subgroup size instead of 64; constant 2 = true);
                * spec >> VK_SPEC_KV_SHIFT: constant 3, the KV caches' dtype (0 f32, 1 bf16,
                * 2 f16, 3 q8_0; store_kv and attention); constant 4 = 8 << (spec & 7), the
                * workgroup size of sample.comp (its spec is below 8) */
    enc_dtype qtype; /* ENC_F32, or the block type of the op's weights: the op's NAME_q shader
                      * (matmul_q, matmul_id_q, get_rows_q), specialization constant 5 */
    backend_buffer *bufs[VK_N_DESCRIPTORS]; /* NULL: the dummy buffer */
    VkDeviceSize start[VK_N_DESCRIPTORS], range[VK_N_DESCRIPTORS];
    backend_buffer *tex[VK_N_TEXELS];       /* NULL: the dummy buffer's view */
    VkDeviceSize tex_start[VK_N_TEXELS], tex_range[VK_N_TEXELS];
    vk_push push;
    uint32_t groups[3];
    bool barrier_after; /* the next dispatch of the node waits for this one */
} vk_dispatch;

typedef struct vk_ctx {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice phys;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem_props;
    VkDevice dev;
    VkQueue queue;
    uint32_t queue_family;
    bool subgroup;          /* the subgroup variants of the shaders run here */
    uint32_t subgroup_size; /* as the device reports it (what SPIR-V 1.3 shaders see) */
    bool one_subgroup;      /* attention's workgroups are one subgroup (a CPU device) */
    bool texels;            /* read-only tensors are read through texel views where they can be */
    bool timestamps;        /* the queue writes timestamps */
    bool float64;           /* shaderFloat64 on (ENCORE_VK_FLOAT64=0: off, as if the device lacked it) */
    bool sampler_ok;        /* the device sampler runs here (vk_sampler_check) */
    VkCommandPool cmd_pool;
    VkCommandBuffer cmd;    /* for eager ops and transfers */
    VkFence fence;
    VkQueryPool queries;    /* two timestamps around each submission */
    double last_device_s, total_device_s;
    uint64_t n_submits;          /* submissions waited for so far */
    vk_range expected[VK_MAX_EXPECTED_READS]; /* for the next graph_compute or the capture */
    int n_expected;
    bool profile;                /* ENCORE_VK_PROFILE=1: device time per op, printed at the end */
    double op_seconds[GRAPH_OP_COUNT];       /* eager ops */
    int64_t op_count[GRAPH_OP_COUNT];
    double rec_op_seconds[GRAPH_OP_COUNT];   /* nodes inside replayed recordings */
    int64_t rec_op_count[GRAPH_OP_COUNT];
    double rec_seconds;                      /* the replays' first to last timestamp */
    int64_t rec_replays;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipe_layout;
    VkShaderModule modules[GRAPH_OP_COUNT];
    VkPipeline pipelines[GRAPH_OP_COUNT][VK_N_SPECS];
    VkShaderModule qmodules[GRAPH_OP_COUNT];   /* the NAME_q shaders (vk_dispatch.qtype) */
    VkPipeline qpipelines[GRAPH_OP_COUNT][VK_N_QTYPES][VK_N_SPECS];
    VkDescriptorPool eager_pool; /* reset after every eager op */
    backend_buffer *dummy;       /* bound where a shader has no tensor */
    backend_buffer *staging;     /* host-visible, VK_STAGING_SIZE bytes */
    void *staging_map;
    backend_buffer **pending;    /* buffers with pending mirror bytes */
    int n_pending, cap_pending;
    uint64_t heap_used[VK_MAX_MEMORY_HEAPS];
    vk_dispatch scratch[VK_MAX_DISPATCHES]; /* the dispatches of the node being encoded */
    struct backend_recording *capturing;
    int n_validation;            /* validation messages so far */
    char validation_first[512];
} vk_ctx;

/* --- vk_device.c --- */
enc_status vk_device_open(vk_ctx *c, int index);
void vk_device_close(vk_ctx *c);
/* ENC_OK, or the validation layer's first message as an error. */
enc_status vk_check_validation(vk_ctx *c);
/* A failed Vulkan call as an error naming it. */
enc_status vk_fail(VkResult r, const char *what);
const char *vk_result_name(VkResult r);

/* --- vk_memory.c --- */
/* Make room for item n of a growing array of *cap items of elem bytes. */
enc_status vk_grow(void **items, int *cap, int n, size_t elem, const char *what);
enc_status vk_buffer_create(vk_ctx *c, size_t size, const char *what, bool host_visible,
                            backend_buffer **out);
void vk_buffer_destroy(vk_ctx *c, backend_buffer *b);
/* The R32G32B32A32_UINT texel view of bytes [start, start + range) of b,
 * made at first use and kept with the buffer. */
enc_status vk_buffer_view(vk_ctx *c, backend_buffer *b, VkDeviceSize start, VkDeviceSize range, VkBufferView *out);
/* Record copies of every pending mirror range, then a barrier. */
void vk_record_pending(vk_ctx *c, VkCommandBuffer cmd);
void vk_pending_drop(vk_ctx *c, backend_buffer *b);
enc_status vk_buffer_write(vk_ctx *c, backend_buffer *b, size_t offset, const void *src, size_t size);
enc_status vk_buffer_read(vk_ctx *c, backend_buffer *b, size_t offset, void *dst, size_t size);
enc_status vk_buffer_zero(vk_ctx *c, backend_buffer *b);
/* A barrier making every earlier transfer and shader write visible to every
 * later transfer, shader and host access. */
void vk_record_barrier(VkCommandBuffer cmd);
/* Record copies of the ranges (of buffers with a mirror) into their
 * mirrors, then a barrier; after the submission, vk_mark_fresh makes
 * vk_buffer_read take them from the mirror without a round trip. */
void vk_record_readback(VkCommandBuffer cmd, const vk_range *r, int n);
void vk_mark_fresh(const vk_ctx *c, const vk_range *r, int n);
/* Begin c->cmd for a one-off submission. */
enc_status vk_cmd_begin(vk_ctx *c, VkCommandBuffer cmd);
/* End cmd (unless already ended), submit it, wait; timestamps if any. */
enc_status vk_submit_wait(vk_ctx *c, VkCommandBuffer cmd, bool end);

/* --- vk_pipelines.c --- */
enc_status vk_pipelines_init(vk_ctx *c);
void vk_pipelines_free(vk_ctx *c);
/* The pipeline of op with the specialization constants of `spec`
 * (vk_dispatch.spec) for weights of type qtype (vk_dispatch.qtype), made at
 * first use. */
enc_status vk_pipeline_get(vk_ctx *c, graph_op op, int spec, enc_dtype qtype, VkPipeline *out);
/* The index of block type t among the _q shaders' VK_N_QTYPES (qpipelines),
 * or -1 for a type they do not read (vk_ops.c). */
int vk_qtype_slot(enc_dtype t);
/* Whether op has a shader reading weights of block type t (vk_ops.c). */
bool vk_ops_reads_quantized(graph_op op, enc_dtype t);

/* --- vk_profile.c --- */
/* A recording's timestamps, one after each node (NULL: not profiling). */
typedef struct vk_rec_profile vk_rec_profile;
/* With ENCORE_VK_PROFILE and timestamps: a query pool for the recording
 * begun in cmd, and its first timestamp; else *out = NULL. */
enc_status vk_profile_rec_begin(vk_ctx *c, VkCommandBuffer cmd, vk_rec_profile **out);
/* The timestamp after a node of op `op` (nothing for NULL). */
void vk_profile_rec_node(vk_rec_profile *p, VkCommandBuffer cmd, graph_op op);
/* After a replay: each node's device time added to its op. */
void vk_profile_rec_collect(vk_ctx *c, const vk_rec_profile *p);
void vk_profile_rec_free(vk_ctx *c, vk_rec_profile *p);
/* Both tables (eager ops, replayed nodes) on stderr. */
void vk_profile_print(const vk_ctx *c);

/* --- vk_ops.c --- */
enum { VK_SAMPLE_INVOCATIONS = 1024, /* shaders/sample.comp's workgroup, at most */
       VK_SAMPLE_SMALL_VOCAB = 32768, /* and 256 invocations up to this many ids */
       VK_SAMPLE_TINY_VOCAB = 4096, /* and 64 up to this many */
       VK_SAMPLE_CPU_NARROW_VOCAB = 1024 /* and on a CPU device 8 up to this many */ };
/* ENC_OK where the device runs shaders/sample.comp (shaderFloat64, a
 * workgroup of VK_SAMPLE_INVOCATIONS), else an error naming what it lacks. */
enc_status vk_sampler_check(const vk_ctx *c);
/* The dispatches of one node (several where a weight spans more than one
 * storage-buffer range). */
enc_status vk_ops_plan(const vk_ctx *c, const graph_node *n, vk_dispatch *out, int *n_out);

#endif
