/* vk_backend.c - the Vulkan backend's vtable: buffers, eager execution,
 * capture and replay.
 *
 * Eager: each node is one command buffer (pending input copies, its
 * dispatches, a barrier), submitted on its own while the host waits, as an
 * accelerator's eager mode is. Captured: between capture_begin and
 * capture_end, graph_compute records the same dispatches, with the same
 * shaders and grids, into one VkCommandBuffer with a barrier after each
 * node; each step input (a GRAPH_INPUT tensor in a buffer with a host
 * mirror) is copied from its mirror at its first use in the recording. A
 * replay is then: the engine writes the inputs (memcpy into mapped
 * mirrors), one submit, one wait, and a read of the outputs. A multi-step
 * recording holds K forward passes whose inputs advance on the device.
 *
 * The capture contract: while capturing, buffer alloc, free, write and read
 * are refused with ENC_ERR_CAPTURE, as are a nested capture and a replay. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_impl.h"
#include "base/env_flag.h"
#include "base/log.h"

enum { VK__SETS_PER_POOL = 256 };

struct backend_recording {
    VkCommandBuffer cmd;
    vk_range reads[VK_MAX_EXPECTED_READS]; /* copied back to their mirrors by every replay */
    int n_reads;
    VkDescriptorPool *pools; /* descriptor sets of its dispatches, VK__SETS_PER_POOL each */
    int n_pools, sets_left;
    backend_buffer **staged; /* step inputs it copies from their mirrors */
    int n_staged, cap_staged;
    vk_rec_profile *profile; /* ENCORE_VK_PROFILE: a timestamp after each node, else NULL */
};

static enc_status vk__refuse_in_capture(backend *be, const char *call, const char *what)
{
    const vk_ctx *c = be->ctx;
    return backend_refuse_in_capture(be, c->capturing != NULL, call, what);
}

/* --- buffers ------------------------------------------------------------------ */

static enc_status vk__buffer_alloc(backend *be, size_t size, const char *what, backend_buffer **out)
{
    *out = NULL;
    ENC_TRY(vk__refuse_in_capture(be, "alloc", what));
    vk_ctx *c = be->ctx;
    ENC_TRY(vk_buffer_create(c, size, what, false, out));
    enc_status s = vk_buffer_zero(c, *out);
    if (s != ENC_OK) {
        vk_buffer_destroy(c, *out);
        *out = NULL;
    }
    return s;
}

static enc_status vk__buffer_free(backend *be, backend_buffer *b)
{
    if (!b) return ENC_OK;
    ENC_TRY(vk__refuse_in_capture(be, "free", b->what));
    vk_buffer_destroy(be->ctx, b);
    return ENC_OK;
}

static enc_status vk__check_range(const backend_buffer *b, size_t offset, size_t size, const char *call)
{
    if (offset > b->size || size > b->size - offset)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "vulkan: %s of %zu bytes at offset %zu outside the %zu-byte "
                        "buffer '%s'", call, size, offset, b->size, b->what);
    return ENC_OK;
}

static enc_status vk__buffer_write(backend *be, backend_buffer *b, size_t offset, const void *src, size_t size)
{
    ENC_TRY(vk__refuse_in_capture(be, "write", b->what));
    ENC_TRY(vk__check_range(b, offset, size, "write"));
    return vk_buffer_write(be->ctx, b, offset, src, size);
}

static enc_status vk__buffer_read(backend *be, backend_buffer *b, size_t offset, void *dst, size_t size)
{
    ENC_TRY(vk__refuse_in_capture(be, "read", b->what));
    ENC_TRY(vk__check_range(b, offset, size, "read"));
    return vk_buffer_read(be->ctx, b, offset, dst, size);
}

/* --- encoding dispatches ----------------------------------------------------------- */

static enc_status vk__encode(vk_ctx *c, VkCommandBuffer cmd, VkDescriptorSet set, const vk_dispatch *d)
{
    VkPipeline pipe;
    ENC_TRY(vk_pipeline_get(c, d->op, d->spec, d->qtype, &pipe));
    VkDescriptorBufferInfo bi[VK_N_DESCRIPTORS];
    for (int b = 0; b < VK_N_DESCRIPTORS; b++) {
        bool bound = d->bufs[b] != NULL;
        bi[b].buffer = bound ? d->bufs[b]->buf : c->dummy->buf;
        bi[b].offset = bound ? d->start[b] : 0;
        bi[b].range = bound ? d->range[b] : VK_WHOLE_SIZE;
    }
    VkBufferView views[VK_N_TEXELS];
    for (int t = 0; t < VK_N_TEXELS; t++) {
        if (d->tex[t]) ENC_TRY(vk_buffer_view(c, d->tex[t], d->tex_start[t], d->tex_range[t], &views[t]));
        else ENC_TRY(vk_buffer_view(c, c->dummy, 0, c->dummy->size, &views[t]));
    }
    VkWriteDescriptorSet w[] = {
        {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set, .dstBinding = 0,
         .descriptorCount = VK_N_DESCRIPTORS, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = bi},
        {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set, .dstBinding = VK_N_DESCRIPTORS,
         .descriptorCount = VK_N_TEXELS, .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
         .pTexelBufferView = views},
    };
    vkUpdateDescriptorSets(c->dev, 2, w, 0, NULL);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, c->pipe_layout, 0, 1, &set, 0, NULL);
    vkCmdPushConstants(cmd, c->pipe_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof d->push, &d->push);
    vkCmdDispatch(cmd, d->groups[0], d->groups[1], d->groups[2]);
    return ENC_OK;
}

static enc_status vk__pool_create(vk_ctx *c, uint32_t sets, VkDescriptorPool *out)
{
    VkDescriptorPoolSize ps[] = {
        {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = sets * VK_N_DESCRIPTORS},
        {.type = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, .descriptorCount = sets * VK_N_TEXELS},
    };
    VkDescriptorPoolCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = sets,
        .poolSizeCount = 2,
        .pPoolSizes = ps,
    };
    VkResult r = vkCreateDescriptorPool(c->dev, &pi, NULL, out);
    return r == VK_SUCCESS ? ENC_OK : vk_fail(r, "vkCreateDescriptorPool");
}

static enc_status vk__set_alloc(vk_ctx *c, VkDescriptorPool pool, VkDescriptorSet *out)
{
    VkDescriptorSetAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &c->set_layout,
    };
    VkResult r = vkAllocateDescriptorSets(c->dev, &ai, out);
    return r == VK_SUCCESS ? ENC_OK : vk_fail(r, "vkAllocateDescriptorSets");
}

/* A descriptor set that lives as long as the recording. */
static enc_status vk__rec_set(vk_ctx *c, backend_recording *rec, VkDescriptorSet *out)
{
    if (rec->sets_left == 0) {
        VkDescriptorPool *p = realloc(rec->pools, (size_t)(rec->n_pools + 1) * sizeof *p);
        if (!p) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "vulkan: recording's descriptor pools");
        rec->pools = p;
        ENC_TRY(vk__pool_create(c, VK__SETS_PER_POOL, &rec->pools[rec->n_pools]));
        rec->n_pools++;
        rec->sets_left = VK__SETS_PER_POOL;
    }
    rec->sets_left--;
    return vk__set_alloc(c, rec->pools[rec->n_pools - 1], out);
}

static bool vk__is_staged(const backend_recording *rec, const backend_buffer *b)
{
    for (int i = 0; i < rec->n_staged; i++)
        if (rec->staged[i] == b) return true;
    return false;
}

/* Record the copy of each step input the node reads from its mirror, at its
 * first use in the recording. */
static enc_status vk__stage_inputs(backend_recording *rec, const graph_node *n)
{
    bool copied = false;
    for (int s = 0; s < GRAPH_MAX_SRC; s++) {
        const graph_tensor *t = n->src[s];
        backend_buffer *b = t ? t->buffer : NULL;
        if (!b || t->kind != GRAPH_INPUT || !b->mirror || vk__is_staged(rec, b)) continue;
        ENC_TRY(vk_grow((void **)&rec->staged, &rec->cap_staged, rec->n_staged, sizeof *rec->staged,
                        "recording's inputs"));
        rec->staged[rec->n_staged++] = b;
        VkBufferCopy r = {.size = b->size ? b->size : 4};
        vkCmdCopyBuffer(rec->cmd, b->mirror, b->buf, 1, &r);
        copied = true;
    }
    if (copied) vk_record_barrier(rec->cmd);
    return ENC_OK;
}

/* Record one node into a recording. */
static enc_status vk__record_node(vk_ctx *c, backend_recording *rec, const graph_node *n)
{
    int nd;
    ENC_TRY(vk_ops_plan(c, n, c->scratch, &nd));
    ENC_TRY(vk__stage_inputs(rec, n));
    for (int i = 0; i < nd; i++) {
        VkDescriptorSet set;
        ENC_TRY(vk__rec_set(c, rec, &set));
        ENC_TRY(vk__encode(c, rec->cmd, set, &c->scratch[i]));
        if (c->scratch[i].barrier_after && i + 1 < nd) vk_record_barrier(rec->cmd);
    }
    vk_record_barrier(rec->cmd);
    vk_profile_rec_node(rec->profile, rec->cmd, n->op);
    return ENC_OK;
}

/* Run one node now: its own submission, the host waiting; the last node
 * of a graph also brings back what the host said it will read. */
static enc_status vk__run_node(vk_ctx *c, const graph_node *n, bool last)
{
    int nd;
    ENC_TRY(vk_ops_plan(c, n, c->scratch, &nd));
    ENC_TRY(vk_cmd_begin(c, c->cmd));
    vk_record_pending(c, c->cmd);
    enc_status s = ENC_OK;
    for (int i = 0; i < nd && s == ENC_OK; i++) {
        VkDescriptorSet set;
        s = vk__set_alloc(c, c->eager_pool, &set);
        if (s == ENC_OK) s = vk__encode(c, c->cmd, set, &c->scratch[i]);
        if (s == ENC_OK && c->scratch[i].barrier_after && i + 1 < nd) vk_record_barrier(c->cmd);
    }
    vk_record_barrier(c->cmd);
    if (last) vk_record_readback(c->cmd, c->expected, c->n_expected);
    if (s == ENC_OK) s = vk_submit_wait(c, c->cmd, true);
    else vkEndCommandBuffer(c->cmd);
    if (s == ENC_OK && last) vk_mark_fresh(c, c->expected, c->n_expected);
    c->op_seconds[n->op] += c->last_device_s;
    c->op_count[n->op]++;
    vkResetDescriptorPool(c->dev, c->eager_pool, 0);
    return s;
}

static enc_status vk__graph_compute(backend *be, const graph *g)
{
    vk_ctx *c = be->ctx;
    for (int i = 0; i < g->n_nodes; i++) {
        enc_status s = c->capturing ? vk__record_node(c, c->capturing, &g->nodes[i])
                                    : vk__run_node(c, &g->nodes[i], i == g->n_nodes - 1);
        if (s != ENC_OK) {
            if (!c->capturing) c->n_expected = 0;
            return enc_fail_context(s, "node %d (%s)", i, graph_op_name(g->nodes[i].op));
        }
    }
    if (!c->capturing) c->n_expected = 0; /* a capture keeps them for capture_end */
    return ENC_OK;
}

static enc_status vk__expect_read(backend *be, backend_buffer *b, size_t offset, size_t size)
{
    vk_ctx *c = be->ctx;
    ENC_TRY(vk__check_range(b, offset, size, "expect_read"));
    if (c->n_expected < VK_MAX_EXPECTED_READS) c->expected[c->n_expected++] = (vk_range){b, offset, size};
    return ENC_OK; /* past the maximum: read the usual way */
}

/* --- capture and replay --------------------------------------------------------------- */

static void vk__recording_free(backend *be, backend_recording *rec)
{
    if (!rec) return;
    vk_ctx *c = be->ctx;
    if (rec->cmd) vkFreeCommandBuffers(c->dev, c->cmd_pool, 1, &rec->cmd);
    for (int i = 0; i < rec->n_pools; i++) vkDestroyDescriptorPool(c->dev, rec->pools[i], NULL);
    free(rec->pools);
    free(rec->staged);
    vk_profile_rec_free(c, rec->profile);
    free(rec);
}

static enc_status vk__capture_begin(backend *be)
{
    vk_ctx *c = be->ctx;
    if (c->capturing) return enc_fail(ENC_ERR_CAPTURE, "vulkan: capture_begin while already capturing");
    backend_recording *rec = calloc(1, sizeof *rec);
    if (!rec) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "vulkan: recording");
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = c->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    VkResult r = vkAllocateCommandBuffers(c->dev, &ai, &rec->cmd);
    enc_status s = r == VK_SUCCESS ? vk_cmd_begin(c, rec->cmd) : vk_fail(r, "vkAllocateCommandBuffers");
    if (s == ENC_OK) s = vk_profile_rec_begin(c, rec->cmd, &rec->profile);
    if (s != ENC_OK) {
        vk__recording_free(be, rec);
        return s;
    }
    c->capturing = rec;
    c->n_expected = 0;
    return ENC_OK;
}

static enc_status vk__capture_end(backend *be, backend_recording **out)
{
    vk_ctx *c = be->ctx;
    *out = NULL;
    if (!c->capturing) return enc_fail(ENC_ERR_CAPTURE, "vulkan: capture_end without capture_begin");
    backend_recording *rec = c->capturing;
    c->capturing = NULL;
    vk_record_readback(rec->cmd, c->expected, c->n_expected);
    memcpy(rec->reads, c->expected, sizeof rec->reads);
    rec->n_reads = c->n_expected;
    c->n_expected = 0;
    if (c->timestamps) vkCmdWriteTimestamp(rec->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, c->queries, 1);
    VkResult r = vkEndCommandBuffer(rec->cmd);
    *out = rec; /* the caller's to free, also on failure */
    return r == VK_SUCCESS ? vk_check_validation(c) : vk_fail(r, "vkEndCommandBuffer");
}

static enc_status vk__replay(backend *be, const backend_recording *rec)
{
    vk_ctx *c = be->ctx;
    if (c->capturing) return enc_fail(ENC_ERR_CAPTURE, "vulkan: replay refused during capture");
    for (int i = 0; i < rec->n_staged; i++) vk_pending_drop(c, rec->staged[i]); /* it copies them in full */
    if (c->n_pending) { /* other buffers written since the last submission */
        ENC_TRY(vk_cmd_begin(c, c->cmd));
        vk_record_pending(c, c->cmd);
        ENC_TRY(vk_submit_wait(c, c->cmd, true));
    }
    ENC_TRY(vk_submit_wait(c, rec->cmd, false));
    vk_mark_fresh(c, rec->reads, rec->n_reads);
    vk_profile_rec_collect(c, rec->profile);
    return ENC_OK;
}

/* --- lifetime ------------------------------------------------------------------------- */

static void vk__destroy(backend *be)
{
    vk_ctx *c = be->ctx;
    if (c->profile) vk_profile_print(c);
    if (c->dev) vkDeviceWaitIdle(c->dev);
    vk__recording_free(be, c->capturing);
    if (c->eager_pool) vkDestroyDescriptorPool(c->dev, c->eager_pool, NULL);
    vk_buffer_destroy(c, c->dummy);
    vk_buffer_destroy(c, c->staging);
    free(c->pending);
    if (c->dev) vk_pipelines_free(c);
    vk_device_close(c);
    free(c);
    free(be);
}

static double vk__device_seconds(const backend *be)
{
    const vk_ctx *c = be->ctx;
    return c->total_device_s;
}

/* Every op; the device sampler only where the device can run it
 * (vk_sampler_check; without it sampled requests read their logits rows
 * and sample on the host). */
static bool vk__supports_op(const backend *be, graph_op op)
{
    const vk_ctx *c = be->ctx;
    return (unsigned)op < GRAPH_OP_COUNT && (op != GRAPH_OP_SAMPLE || c->sampler_ok);
}

/* Matmul, matmul_id and get_rows read Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, IQ4_NL
 * and Q5_0 weights in their blocks (vk_ops.c, shaders/quant.glsl). */
static bool vk__supports_weight_dtype(const backend *be, graph_op op, enc_dtype t)
{
    (void)be;
    return vk_ops_reads_quantized(op, t);
}

static void vk__describe(const backend *be, char *out, size_t size)
{
    const vk_ctx *c = be->ctx;
    snprintf(out, size, "vulkan: %s", c->props.deviceName);
}

static const struct backend_i vk__iface = {
    .name = "vulkan",
    .kv_cache_dtypes = 1u << ENC_F32 | 1u << ENC_F16 | 1u << ENC_BF16 | 1u << ENC_Q8_0,
    .buffer_alloc = vk__buffer_alloc,
    .buffer_from_host = NULL, /* weights are uploaded to device-local memory */
    .buffer_free = vk__buffer_free,
    .buffer_write = vk__buffer_write,
    .buffer_read = vk__buffer_read,
    .graph_compute = vk__graph_compute,
    .expect_read = vk__expect_read,
    .capture_begin = vk__capture_begin,
    .capture_end = vk__capture_end,
    .replay = vk__replay,
    .recording_free = vk__recording_free,
    .device_seconds = vk__device_seconds,
    .supports_op = vk__supports_op,
    .supports_weight_dtype = vk__supports_weight_dtype,
    .describe = vk__describe,
    .destroy = vk__destroy,
};

static enc_status vk__init(vk_ctx *c, int index)
{
    ENC_TRY(vk_device_open(c, index));
    c->sampler_ok = vk_sampler_check(c) == ENC_OK;
    if (!c->sampler_ok) /* the engine then reads logits rows and samples on the host */
        enc_log_info("%s; sampled requests take the host sampler", enc_last_error());
    c->profile = enc_env_flag("ENCORE_VK_PROFILE", false);
    ENC_TRY(vk_pipelines_init(c));
    ENC_TRY(vk__pool_create(c, VK_MAX_DISPATCHES, &c->eager_pool));
    ENC_TRY(vk_buffer_create(c, 256, "dummy", false, &c->dummy));
    ENC_TRY(vk_buffer_create(c, VK_STAGING_SIZE, "staging", true, &c->staging));
    VkResult r = vkMapMemory(c->dev, c->staging->mem, 0, VK_WHOLE_SIZE, 0, &c->staging_map);
    return r == VK_SUCCESS ? ENC_OK : vk_fail(r, "vkMapMemory (staging)");
}

enc_status vk_backend_create(int index, backend **out)
{
    *out = NULL;
    backend *be = calloc(1, sizeof *be);
    vk_ctx *c = calloc(1, sizeof *c);
    if (!be || !c) {
        free(be);
        free(c);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "vulkan backend");
    }
    be->iface = &vk__iface;
    be->ctx = c;
    enc_status s = vk__init(c, index);
    if (s != ENC_OK) {
        vk__destroy(be);
        return s;
    }
    *out = be;
    return ENC_OK;
}
